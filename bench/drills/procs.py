#!/usr/bin/env python3
"""procs.py MARK [VAR=VALUE] [COMM]: the pids of the processes whose
environment holds DRILL_MARK=MARK (and VAR=VALUE; and whose command name is
COMM), one per line. bench/drills.sh gives each drill's job its own MARK,
so what is left of a job after it ended can be found and counted."""
import os
import sys

want = [f"DRILL_MARK={sys.argv[1]}".encode()]
if len(sys.argv) > 2 and sys.argv[2]:
    want.append(sys.argv[2].encode())
comm = sys.argv[3] if len(sys.argv) > 3 else None
for pid in os.listdir("/proc"):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    try:
        env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        if comm and open(f"/proc/{pid}/comm").read().strip() != comm:
            continue
    except OSError:
        continue
    if all(w in env for w in want):
        print(pid)
