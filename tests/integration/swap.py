#!/usr/bin/python3
# Race helper for toctou.sh: wait (up to SECONDS) for FILE to be replaced (a new inode), then
# rename EVIL's bytes over it at once, as a caller who can write the directory would.
import os
import shutil
import sys
import time

f, evil, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
ino0 = os.stat(f).st_ino
print("ready", flush=True)
t0 = time.time()
while time.time() - t0 < secs:
    try:
        st = os.stat(f)
    except FileNotFoundError:
        continue
    if st.st_ino != ino0:
        shutil.copy(evil, f + ".x")
        os.rename(f + ".x", f)
        print("swapped", flush=True)
        break
