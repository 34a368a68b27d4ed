# A git host over ssh for tests (issue 30): Debian's sshd in a network namespace of the test's own,
# in a mount namespace of its own with a user "git" (uid 4242) that the host's /etc/passwd does
# not have, serving one bare repository as ssh://git@HOST/repo.git. Sourced, not run; needs
# tap.sh (tap_bg) and netns.sh.

# shellcheck shell=bash

HEZO_GIT_UID=4242

# hezo_gitssh_server DIR NS VETH PREFIX: DIR/sshd (host key DIR/sshd/host, config, log, the keys
# it takes in DIR/sshd/authorized_keys, which the caller writes) and DIR/srv/repo.git (one
# commit on main); namespace NS made and linked from the host by VETH, sshd listening on
# PREFIX.2:22 and PREFIX.3:22. An empty command answers "hello from git.test". The caller's
# cleanup deletes NS and VETH and kills $(cat DIR/sshd/pid). Fails with a message on stderr.
hezo_gitssh_server()
{
	local E=$1 INS=$2 VETH=$3 PFX=$4 back=true
	mkdir -p "$E/sshd" "$E/srv" || return 1
	ssh-keygen -q -t ed25519 -N '' -f "$E/sshd/host" || { echo "ssh-keygen cannot make the host key" >&2; return 1; }
	touch "$E/sshd/authorized_keys"
	grep -v '^git:' /etc/passwd >"$E/sshd/passwd"
	echo "git:x:$HEZO_GIT_UID:$HEZO_GIT_UID:git:$E/srv:/bin/sh" >>"$E/sshd/passwd"
	# What a git host does with ssh://git@git.test/repo.git: the path names its repository.
	cat >"$E/sshd/serve" <<EOF
#!/bin/sh
case "\$SSH_ORIGINAL_COMMAND" in
"git-upload-pack '/repo.git'") exec git-upload-pack '$E/srv/repo.git' ;;
"git-receive-pack '/repo.git'") exec git-receive-pack '$E/srv/repo.git' ;;
'') echo "hello from git.test"; exit 0 ;;
*) echo "not served: \$SSH_ORIGINAL_COMMAND" >&2; exit 1 ;;
esac
EOF
	chmod 0755 "$E/sshd/serve"
	cat >"$E/sshd/config" <<EOF
ListenAddress $PFX.2:22
ListenAddress $PFX.3:22
HostKey $E/sshd/host
PidFile $E/sshd/pid
AuthorizedKeysFile $E/sshd/authorized_keys
AllowUsers git
UsePAM no
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
ForceCommand $E/sshd/serve
LogLevel VERBOSE
EOF
	git init -q --bare -b main "$E/srv/repo.git" &&
		git -C "$E" init -q -b main seed && git -C "$E/seed" -c user.name=seed -c user.email=seed@test \
		commit -q --allow-empty -m seed && git -C "$E/seed" push -q "$E/srv/repo.git" main ||
		{ echo "cannot make the repository" >&2; return 1; }
	chown -R "$HEZO_GIT_UID:$HEZO_GIT_UID" "$E/srv"
	ip netns add "$INS" && ip -n "$INS" link set lo up &&
		hezo_netns_link_host "$VETH" "$INS" "$PFX" 2 3 &&
		ip -n "$INS" route add default via "$PFX.1" || { echo "cannot make the sshd namespace" >&2; return 1; }
	# /run/sshd (privilege separation) on a tmpfs over /run, the test's directory put back when it
	# was under /run; the host's /etc/passwd and /run stay as they are.
	case $E in /run/*) back="mkdir -p '$E' && mount --rbind '/mnt${E#/run}' '$E'" ;; esac
	tap_bg ip netns exec "$INS" unshare -m --propagation private sh -c \
		"mount --rbind /run /mnt && mount -t tmpfs tmpfs /run && mkdir -m 0755 /run/sshd && $back &&
		mount --bind '$E/sshd/passwd' /etc/passwd && exec /usr/sbin/sshd -D -e -f '$E/sshd/config' 2>>'$E/sshd/log'"
	hezo_wait_listen "$INS" tcp "$PFX.2" 22 || { echo "sshd does not listen: $(tail -n 5 "$E/sshd/log")" >&2; return 1; }
}
