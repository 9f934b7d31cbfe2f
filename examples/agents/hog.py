#!/usr/bin/env python3
"""Resource scenario agent: 'mem [PAUSE]' allocates without end (PAUSE seconds
between 16 MiB chunks), 'cpu [SECONDS]' spins on every core."""
import os, sys, threading, time

if sys.argv[1] == "mem":
    pause = float(sys.argv[2]) if len(sys.argv) > 2 else 0
    chunks = []
    while True:
        chunks.append(bytearray(16 << 20))
        print("allocated %d MiB" % (16 * len(chunks)), flush=True)
        time.sleep(pause)
else:
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 3
    end = time.time() + seconds
    def spin():
        while time.time() < end:
            pass
    ts = [threading.Thread(target=spin) for _ in range(os.cpu_count() or 2)]
    for t in ts: t.start()
    for t in ts: t.join()
    print("spun %d threads for %.1f s" % (len(ts), seconds))
