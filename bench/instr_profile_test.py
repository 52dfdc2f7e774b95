#!/usr/bin/env python3
"""instr_profile_test.py: instr_profile.py's counting rules on a hand-written callgrind file
(CTest bench.scripts): the hand-off left out, the allocator charged per call, pinguard's own
allocator calls counted, a count limited to some objects, names in both the plain and the
compressed form callgrind writes."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# summary 1000 = pg_thing 300 + malloc 150 + _int_malloc 300 + pthread_cond_wait 250. Three
# allocator calls from libpinguard.so and two from the program: work is
# 1000 - 250 (hand-off) - 450 (the allocator's own) + 5 * 100 = 800.
PLAIN = """events: Ir
summary: 1000
ob=/x/libpinguard.so
fl=a.c
fn=pg_thing
1 300
cob=/lib/x86_64-linux-gnu/libc.so.6
cfi=malloc.c
cfn=malloc
calls=3 0
1 300
ob=/x/prog
fl=p.c
fn=main
cob=/lib/x86_64-linux-gnu/libc.so.6
cfi=malloc.c
cfn=calloc
calls=2 0
1 150
ob=/lib/x86_64-linux-gnu/libc.so.6
fl=malloc.c
fn=malloc
1 150
cfn=_int_malloc
calls=3 0
1 300
fn=calloc
fn=_int_malloc
1 300
fn=pthread_cond_wait
1 250
"""

# The same run with names compressed: "(id) name" the first time, "(id)" after.
COMPRESSED = """events: Ir
summary: 1000
ob=(1) /x/libpinguard.so
fl=(1) a.c
fn=(1) pg_thing
1 300
cob=(2) /lib/x86_64-linux-gnu/libc.so.6
cfi=(2) malloc.c
cfn=(2) malloc
calls=3 0
1 300
ob=(3) /x/prog
fl=(3) p.c
fn=(3) main
cob=(2)
cfi=(2)
cfn=(4) calloc
calls=2 0
1 150
ob=(2)
fl=(2)
fn=(2)
1 150
cfn=(5) _int_malloc
calls=3 0
1 300
fn=(5)
1 300
fn=(6) pthread_cond_wait
1 250
"""


def run(*args):
    return subprocess.run([sys.executable, os.path.join(HERE, "instr_profile.py"), *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def main():
    with tempfile.TemporaryDirectory() as d:
        for name, text in (("plain", PLAIN), ("compressed", COMPRESSED)):
            path = os.path.join(d, name)
            with open(path, "w") as f:
                f.write(text)
            work = int(run("work", path))
            assert work == 800, (name, work)
            assert int(run("allocs", "libpinguard.so", path)) == 3, name
            assert int(run("allocs", "prog", path)) == 2, name
            # Only some objects: their own instructions, and their own allocator calls at the
            # flat rate (pinguard's 300 + 3 calls; the program's 2 calls, nothing of its own).
            assert int(run("work", "--only", "libpinguard", path)) == 600, name
            assert int(run("work", "--only", "libpinguard|libc", path)) == 600, name
            assert int(run("work", "--only", "/prog$", path)) == 200, name
    print("instr_profile_test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
