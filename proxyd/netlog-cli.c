/*
 * The netlog reader behind `hezo-shim netlog`: finds LOG_DIR/ID.jsonl (a unique id prefix is
 * enough, as with docker's short ids), prints it, optionally only refused lines, optionally
 * following it as proxyd appends.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hezo-cleanup.h"
#include "hezo-json.h"
#include "hezo-netlog.h"

#define LINE_MAX_LEN (64 * 1024)

static int usage(FILE *f)
{
	fprintf(f, "usage: hezo-shim netlog [--follow] [--blocked] [--keys] [--log-dir DIR] "
		   "CONTAINER\n");
	return 2;
}

static bool id_ok(const char *id)
{
	if (!*id || id[0] == '.' || strlen(id) > 128)
		return false;
	for (const char *p = id; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '.' || *p == '-'))
			return false;
	return true;
}

/* Find DIR/ID.jsonl, or the one file whose name starts with ID. */
static int find_log(const char *dir, const char *id, char *path, size_t size)
{
	struct dirent *de;
	char found[512] = "";
	unsigned matches = 0;
	DIR *d;

	snprintf(path, size, "%s/%s.jsonl", dir, id);
	if (access(path, R_OK) == 0)
		return 0;
	d = opendir(dir);
	if (!d) {
		fprintf(stderr, "hezo-shim: netlog: %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (n > 6 && strcmp(de->d_name + n - 6, ".jsonl") == 0 &&
		    strncmp(de->d_name, id, strlen(id)) == 0) {
			matches++;
			snprintf(found, sizeof(found), "%s", de->d_name);
		}
	}
	closedir(d);
	if (matches == 1) {
		snprintf(path, size, "%s/%s", dir, found);
		return 0;
	}
	fprintf(stderr, "hezo-shim: netlog: %s: %s in %s\n", id,
		matches ? "more than one container has this prefix"
			: "no netlog for this container",
		dir);
	return matches ? -EEXIST : -ENOENT;
}

/* Is the line one to print: refused ones only when blocked, the agent's only when keys? */
static bool wanted(const char *line, size_t len, bool blocked, bool keys)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *v = NULL;
	const char *verdict, *proto;

	if (!blocked && !keys)
		return true;
	if (hezo_json_parse(line, len, &v, &err) < 0)
		return true; /* unreadable: show it rather than hide it */
	verdict = hezo_json_string(hezo_json_get(v, "verdict"));
	proto = hezo_json_string(hezo_json_get(v, "proto"));
	if (keys && (!proto || strcmp(proto, "agent") != 0))
		return false;
	return !blocked || !verdict || strcmp(verdict, "allow") != 0;
}

/* Print the complete lines in buf[0..*len), keep an unfinished tail. */
static void emit(char *buf, size_t *len, bool blocked, bool keys)
{
	size_t start = 0;

	for (size_t i = 0; i < *len; i++) {
		if (buf[i] != '\n')
			continue;
		if (wanted(buf + start, i - start, blocked, keys))
			fwrite(buf + start, 1, i + 1 - start, stdout);
		start = i + 1;
	}
	memmove(buf, buf + start, *len - start);
	*len -= start;
	if (*len == LINE_MAX_LEN) {
		/* A "line" this long is not ours: drop it rather than stall. */
		*len = 0;
	}
	fflush(stdout);
}

int hezo_netlog_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"follow", no_argument, NULL, 'f'}, {"blocked", no_argument, NULL, 'b'},
		{"keys", no_argument, NULL, 'k'},   {"log-dir", required_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},   {0},
	};
	const char *dir = getenv("HEZO_NETLOG_DIR");
	bool follow = false, blocked = false, keys = false;
	_cleanup_free_ char *buf = NULL;
	_cleanup_close_ int fd = -1;
	char path[4096];
	size_t len = 0;
	struct stat st;
	int c;

	if (!dir || !*dir)
		dir = HEZO_NETLOG_DIR_DEFAULT;
	optind = 0; /* the caller may have run getopt already */
	while ((c = getopt_long(argc, argv, "+fbkh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			follow = true;
			break;
		case 'b':
			blocked = true;
			break;
		case 'k':
			keys = true;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return usage(stderr);
		}
	}
	if (optind != argc - 1)
		return usage(stderr);
	if (!id_ok(argv[optind])) {
		fprintf(stderr, "hezo-shim: netlog: %s: not a container id\n", argv[optind]);
		return 2;
	}
	if (find_log(dir, argv[optind], path, sizeof(path)) < 0)
		return 1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "hezo-shim: netlog: %s: %s\n", path, strerror(errno));
		return 1;
	}
	buf = malloc(LINE_MAX_LEN);
	if (!buf)
		return 1;
	for (;;) {
		ssize_t n = read(fd, buf + len, LINE_MAX_LEN - len);

		if (n > 0) {
			len += (size_t)n;
			emit(buf, &len, blocked, keys);
			continue;
		}
		if (n < 0 && errno != EINTR) {
			fprintf(stderr, "hezo-shim: netlog: %s: %s\n", path, strerror(errno));
			return 1;
		}
		if (!follow)
			break;
		/* proxyd only appends; a shorter or replaced file means it started over. */
		{
			struct stat now_st;
			struct timespec ts = {0, 250 * 1000 * 1000};
			off_t pos = lseek(fd, 0, SEEK_CUR);

			nanosleep(&ts, NULL);
			if (fstat(fd, &st) == 0 && st.st_size < pos)
				lseek(fd, 0, SEEK_SET);
			if (stat(path, &now_st) == 0 && fstat(fd, &st) == 0 &&
			    (now_st.st_ino != st.st_ino || now_st.st_dev != st.st_dev)) {
				int nfd = open(path, O_RDONLY | O_CLOEXEC);

				if (nfd >= 0) {
					close(fd);
					fd = nfd;
					len = 0;
				}
			}
		}
	}
	return 0;
}
