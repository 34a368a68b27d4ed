#!/usr/bin/python3
# Race helper for toctou.sh: repoint symlink LINK between targets A and B (by rename) as fast as
# it can for SECONDS, as a caller who owns the link's directory would.
import os
import sys
import time

link, a, b, secs = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
t0 = time.time()
n = 0
print("ready", flush=True)
while time.time() - t0 < secs:
    for t in (a, b):
        tmp = "%s.%d" % (link, n)
        os.symlink(t, tmp)
        os.rename(tmp, link)
        n += 1
