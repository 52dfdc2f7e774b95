#!/usr/bin/env python3
"""check_cases.py: compares the tests two configured builds register, to show that moving
cases between CMake and the programs' own declarations (README.md, "Declaring a case") lost,
added or changed none.
    ctest --show-only=json-v1 > before.json     (in a build of the old tree)
    ctest --show-only=json-v1 > after.json      (the same build folder, the new tree)
    check_cases.py before.json after.json [--only REGEX] [--root-a DIR --root-b DIR]
Compares each test's command, arguments, working folder and properties (ENVIRONMENT as an
ordered list; the others by name), ignoring the order of the tests and of their properties.
--root-a/--root-b (each may be given more than once): a source or build folder that differs
between the two, replaced by ROOT. ctest leaves out the command of a test whose program is not
built yet: dump both from built trees, or both from unbuilt ones.
Exit status 0 when the sets are identical, 1 otherwise (each difference printed)."""
import argparse
import json
import re
import sys


def load(path, only, roots):
    with open(path) as f:
        data = json.load(f)
    tests = {}
    for t in data.get("tests", []):
        name = t["name"]
        if only and not re.search(only, name):
            continue
        text = json.dumps(t, sort_keys=True)
        for root in sorted(roots, key=len, reverse=True):  # a build folder inside the source
            text = text.replace(root, "ROOT")
        t = json.loads(text)
        props = {}
        for p in t.get("properties", []):
            props[p["name"]] = p["value"]
        # The backtrace points at the CMake file and line that registered the test: that is
        # what moves, so it is left out.
        props.pop("_BACKTRACE_TRIPLES", None)
        tests[name] = {"command": t.get("command"), "properties": props}
    return tests


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--only", help="compare only the tests whose name matches this regex")
    ap.add_argument("--root-a", action="append", default=[])
    ap.add_argument("--root-b", action="append", default=[])
    args = ap.parse_args()
    a = load(args.before, args.only, args.root_a)
    b = load(args.after, args.only, args.root_b)
    diffs = 0
    for name in sorted(set(a) - set(b)):
        print("only before: %s" % name)
        diffs += 1
    for name in sorted(set(b) - set(a)):
        print("only after: %s" % name)
        diffs += 1
    for name in sorted(set(a) & set(b)):
        ta, tb = a[name], b[name]
        if ta["command"] != tb["command"]:
            print("%s: command\n  before: %s\n  after:  %s" % (name, ta["command"], tb["command"]))
            diffs += 1
        pa, pb = ta["properties"], tb["properties"]
        for p in sorted(set(pa) | set(pb)):
            if pa.get(p) != pb.get(p):
                print("%s: %s\n  before: %s\n  after:  %s" % (name, p, pa.get(p), pb.get(p)))
                diffs += 1
    print("%d tests before, %d after, %d differences" % (len(a), len(b), diffs))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
