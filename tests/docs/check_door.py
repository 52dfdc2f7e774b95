#!/usr/bin/env python3
"""check_door.py: the shim reaches the engine through core/pg_engine.h alone (CTest docs.door).
docs.check holds the shim's #include lines to that header; this holds its calls, which a header
included through it could otherwise open a side door for. Fails, naming symbol and object, when
an object of libpinguard.so's shim/ part calls a pg_* function that the shim does not define
and the door does not declare: core/pg_engine.h, the headers it takes its descriptions from
(core/pg_engine_types.h, core/pg_kernel_params.h), and the few helpers that come with those
descriptions (HELPERS).
    check_door.py --root DIR [--also ARCHIVE] OBJECT[;OBJECT...]...
"""
import argparse
import os
import re
import subprocess
import sys

DOOR = ["core/pg_engine.h", "core/pg_engine_types.h", "core/pg_kernel_params.h"]

# Called by the shim, declared outside the door, each for a reason of its own.
HELPERS = {
    "pg_stack_capture_here": "an interceptor's call stack, captured in its own frame (pg_stack_t)",
    "pg_stack_capture": "the same, skipping frames (the system-call checks)",
    "pg_shape_make": "a pitched copy's side (pg_op_t's shapes)",
    "pg_module_named": "whether a loaded object's path names a library (pg_lookup.c)",
}


def declared(root):
    names = set()
    for h in DOOR:
        text = open(os.path.join(root, h)).read()
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        names.update(re.findall(r"\b(pg_[a-z0-9_]+)\b", text))  # functions and variables
    return names


def symbols(obj, undefined):
    """The symbols obj (an object or an archive) defines, or those it needs (weak ones, which a
    hook row may leave unset, aside)."""
    args = ["nm", "-u" if undefined else "--defined-only", obj]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    rows = [l.split() for l in out.splitlines()]
    return {r[-1] for r in rows if len(r) >= 2 and (not undefined or r[-2] == "U")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--also", action="append", default=[],
                    help="an archive linked into the shim that is the shim's own")
    ap.add_argument("objects", nargs="+")
    args = ap.parse_args()
    objects = [o for a in args.objects for o in a.split(";") if o]
    defined = set()
    for o in objects + args.also:
        defined |= symbols(o, False)
    allowed = declared(args.root) | set(HELPERS)
    errors = []
    for o in objects:
        for s in sorted(symbols(o, True)):
            if s.startswith("pg_") and s not in defined and s not in allowed:
                errors.append("%s calls %s, which core/pg_engine.h does not declare" %
                              (os.path.basename(o), s))
    for e in errors:
        print("docs.door: " + e)
    if errors:
        return 1
    print("docs.door: %d objects call the engine through its door only" % len(objects))
    return 0


if __name__ == "__main__":
    sys.exit(main())
