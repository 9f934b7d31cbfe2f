#!/usr/bin/env python3
"""Normal execution: read the granted input, compute, write the result."""
import collections, os, platform, sys

words = open("/data/input.txt").read().split()
top = collections.Counter(w.lower().strip(".,") for w in words).most_common(3)
with open("/work/report.txt", "w") as f:
    f.write("words: %d\n" % len(words))
    for w, n in top:
        f.write("%s %d\n" % (w, n))
print("python %s as uid %d in %s, %d words, top: %s"
      % (platform.python_version(), os.getuid(), os.getcwd(), len(words), top))
sys.exit(0)
