#!/usr/bin/python3
# A host daemon as libnetwork's netns.Do, a CNI plugin or a Go program with LockOSThread leaves
# one: its main thread stays in the host's namespaces, one other thread is elsewhere.
#   ns-thread.py net NSPATH PORT READY: the thread joins the network namespace NSPATH and serves
#     a banner on 127.0.0.1:PORT there.
#   ns-thread.py ipc KEY READY: the thread unshares an IPC namespace of its own and makes a System V
#     shared memory segment with KEY in it.
# Once the thread is in place, "PID TID" is written to READY. Runs until killed.
import ctypes
import os
import socket
import sys
import threading
import time

CLONE_NEWIPC = 0x08000000
CLONE_NEWNET = 0x40000000
IPC_CREAT = 0o1000

libc = ctypes.CDLL(None, use_errno=True)


def ready(path):
    with open(path + ".tmp", "w") as f:
        f.write("%d %d\n" % (os.getpid(), threading.get_native_id()))
    os.rename(path + ".tmp", path)


def serve(nspath, port, path):
    fd = os.open(nspath, os.O_RDONLY | os.O_CLOEXEC)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        sys.exit("setns %s: errno %d" % (nspath, ctypes.get_errno()))
    os.close(fd)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(8)
    ready(path)
    while True:
        c, _ = s.accept()
        c.sendall(b"HOST-DAEMON-THREAD\n")
        c.close()


def ipc(key, path):
    if libc.unshare(CLONE_NEWIPC) != 0:
        sys.exit("unshare: errno %d" % ctypes.get_errno())
    if libc.shmget(key, 4096, IPC_CREAT | 0o600) < 0:
        sys.exit("shmget: errno %d" % ctypes.get_errno())
    ready(path)
    while True:
        time.sleep(60)


if sys.argv[1] == "net":
    t = threading.Thread(target=serve, args=(sys.argv[2], int(sys.argv[3]), sys.argv[4]))
else:
    t = threading.Thread(target=ipc, args=(int(sys.argv[2], 0), sys.argv[3]))
t.daemon = True
t.start()
while t.is_alive():
    time.sleep(0.5)
sys.exit(1)
