#!/usr/bin/env python3
"""What a callgrind profile counted: instructions, and calls to the C allocator.

    callgrind_counts.py PROFILE      prints "INSTRUCTIONS ALLOCATIONS"

Instructions are the profile's summary (what `callgrind_annotate` prints as PROGRAM TOTALS).
Allocations are the calls callgrind recorded to malloc, calloc, realloc and the aligned
allocators, from any caller but themselves (glibc's realloc(NULL, n) calls malloc): every
Swift object, array buffer and string storage comes from one of them (swift_slowAlloc), so
this is the figure a malloc-counting interposer would give, read from the same run as the
instructions, with nothing loaded into the process and nothing timing-dependent.
"""
import re
import sys

ALLOCATORS = {"malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign", "valloc"}
NAMED = re.compile(r"^(c?fn)=\((\d+)\)(?: (.*))?$")


def counts(path):
    names = {}          # compressed name id -> name
    function = None     # the function whose costs and calls follow
    callee = None       # the function the next calls= line is about
    total = None
    allocations = 0
    with open(path, encoding="utf-8", errors="replace") as profile:
        for line in profile:
            if line.startswith(("fn=", "cfn=")):
                match = NAMED.match(line.rstrip("\n"))
                if match:
                    kind, key, name = match.groups()
                    if name is not None:
                        names[key] = name
                    name = names.get(key, "")
                else:  # --compress-strings=no
                    kind, name = line.rstrip("\n").split("=", 1)
                if kind == "fn":
                    function = name
                else:
                    callee = name
            elif line.startswith("calls="):
                if callee in ALLOCATORS and function not in ALLOCATORS:
                    allocations += int(line[6:].split()[0])
            elif line.startswith("summary:"):
                total = int(line.split()[1])
    if total is None:
        raise SystemExit(f"{path}: no summary line: not a finished callgrind profile")
    return total, allocations


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    print(*counts(sys.argv[1]))
