#!/usr/bin/env python3
"""check_docs.py: the docs check (CTest docs.check). Fails, naming file and line, when
  - a comment or a document names a file or header that does not exist (a path is looked up
    from the repository's root, from the naming file's folder, as the tail of a repository path,
    and, for headers, in the system's include folders);
  - a Markdown link points at a file that does not exist;
  - README.md's layout table and the repository's folders disagree (a folder missing from the
    table, or a table row naming no folder or file);
  - README.md's list of tracked CUDA entry points and the table of entry points
    (shim/pg_entries.inc, as pg_entry_list prints it: --entries PROGRAM) disagree;
  - a folder's README.md lacks its header (what it owns, whom it may call), or names as callees
    less than the folder's #include lines reach, or says it reaches a folder through one header
    ("`core/` through `core/pg_engine.h` only") and includes another of that folder.
    check_docs.py [--root DIR] [--entries pg_entry_list]
    check_docs.py --entries pg_entry_list --write-entry-points   (rewrites README's list)
    check_docs.py --self-test    (checks tests/docs/broken/, which must give exactly the
                                  problems SELF_TEST_EXPECTED lists)"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Files the docs may name although they are not in the repository: what the build or a run
# writes (relative to a build folder or the working directory), and other projects' files.
GENERATED_PREFIXES = ("build/", "build-", "fail-", ".venv-torch/", "venv/", "lib/python/", "DIR/")
GENERATED = {
    # bench/gpu.sh's results, bench/instr.sh's profiles.
    "env.txt", "matrix.txt", "micro.md", "engine.md", "summary.txt", "torchcopy.md",
    "profile.copy.t1.md", "profile.scale.t1.md",
}
# The user's files, in the docs' examples (a test script, a server, a suppression's site).
PLACEHOLDERS = {
    "your_test.py", "my_test.py", "serve.py", "engine.py", "tests/test_kv.py",
    "kvxfer/commit.c", "kvxfer/store.c", "kvxfer/pool.c",
}
EXTERNAL = {
    # PyTorch's, the kernel's and CPython's files, named for what they define.
    "torch/extension.h", "c10/cuda/CUDAStream.h", "include/uapi/linux/fs.h",
    "Include/cpython/pystate.h", "Include/internal/pycore_frame.h", "Include/cpython/code.h",
    "Include/cpython/unicodeobject.h", "Objects/lnotab_notes.txt", "Objects/locations.md",
    "torch/storage.py",
}
INCLUDE_DIRS = ["/usr/include", "/usr/local/include", "/usr/local/cuda/include",
                "/usr/include/x86_64-linux-gnu", "/usr/include/python3"]
TEXT_EXT = (".c", ".h", ".inc", ".S", ".cu", ".py", ".sh", ".cmake", ".md", ".txt", ".map")
PATH_EXT = r"(?:c|h|inc|S|cu|py|sh|cmake|md|map|ops|txt)"
# A path: optional folders, a name, one of the extensions above; not part of a longer token, a
# URL, a variable or an absolute path (those are the system's).
PATH_RE = re.compile(r"(?<![\w/.$@{:-])((?:\.\./|\./)?(?:[A-Za-z0-9_-][A-Za-z0-9_.-]*/)*"
                     r"[A-Za-z0-9_][A-Za-z0-9_.-]*\." + PATH_EXT + r")(?![\w/*-])")
LINK_RE = re.compile(r"\]\(([^)\s]+)\)")
# Folders whose README.md says what the folder owns and whom it may call, and the folders
# (of these) that are libraries another may include.
OWNED = ["shim", "core", "tracker", "policy", "common", "tools", "bench", "tests/simcuda", "tests/fuzz",
         "tests/torch", "tests/e2e", "tests/unit", "examples/kvxfer"]
LIBRARIES = ["shim", "core", "tracker", "policy", "common", "include"]


def include_dirs():
    """The system's include folders, the compiler's own among them (stdatomic.h lives there)."""
    dirs = list(INCLUDE_DIRS)
    try:
        out = subprocess.run(["cc", "-print-file-name=include"], capture_output=True, text=True)
        dirs.append(out.stdout.strip())
    except OSError:
        pass
    return dirs


def comments_only(rel, text):
    """The text with everything but comments (and Python docstrings) blanked, lines kept: in a
    source file only what a comment says is checked, not the data a test feeds its program."""
    if rel.endswith(".md"):
        return text
    if rel.endswith((".c", ".h", ".inc", ".S", ".cu", ".map")):
        pattern = r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
        keep = lambda m: m.group(0) if m.group(0)[0] == "/" else ""
    else:  # Python, shell, CMake: # to the end of the line; Python's docstrings
        pattern = r'^\s*(?:[rbuRBU]?""".*?"""|[rbuRBU]?\'\'\'.*?\'\'\')|#[^\n]*|' \
                  r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
        keep = lambda m: m.group(0) if m.group(0).lstrip()[:1] in ("#", '"', "'", "r", "b", "u",
                                                                  "R", "B", "U") and \
            (m.group(0).lstrip().startswith("#") or '"""' in m.group(0)[:8] or
             "\'\'\'" in m.group(0)[:8]) else ""
    out = []
    pos = 0
    for m in re.finditer(pattern, text, re.S | re.M):
        out.append(re.sub(r"[^\n]", " ", text[pos:m.start()]))
        kept = keep(m)
        out.append(kept if kept else re.sub(r"[^\n]", " ", m.group(0)))
        pos = m.end()
    out.append(re.sub(r"[^\n]", " ", text[pos:]))
    return "".join(out)


def repo_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                             check=True).stdout.decode()
        return sorted(p for p in out.split("\0") if p and os.path.exists(os.path.join(root, p)))
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith((".", "build"))]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return sorted(files)


class Checker:
    def __init__(self, root, files):
        self.root = root
        self.files = set(files)
        self.dirs = {os.path.dirname(f) for f in files}
        for d in list(self.dirs):
            while d:
                d = os.path.dirname(d)
                self.dirs.add(d)
        self.errors = []
        self.include_dirs = include_dirs()
        # Every tail of every path ("kvxfer/matrix.sh", "matrix.sh"): a name may leave out the
        # folders above it.
        self.tails = {"/".join(f.split("/")[i:]) for f in files for i in range(1, f.count("/") + 1)}

    def fail(self, where, msg):
        self.errors.append("%s: %s" % (where, msg))

    def exists(self, path, near):
        p = os.path.normpath(path)
        if p in self.files or p in self.dirs:
            return True
        q = os.path.normpath(os.path.join(near, path))
        if q in self.files or q in self.dirs:
            return True
        if p in self.tails:
            return True
        if p in EXTERNAL or p in GENERATED or p in PLACEHOLDERS:
            return True
        if p.endswith(".h"):
            return any(os.path.exists(os.path.join(d, p)) for d in self.include_dirs)
        return False

    def check_names(self, rel, text):
        near = os.path.dirname(rel)
        for n, line in enumerate(text.splitlines(), 1):
            if "://" in line and not rel.endswith(".md"):
                line = re.sub(r"\S+://\S+", "", line)
            prose = LINK_RE.sub("]()", line)  # a link's target is checked as a link, below
            for m in PATH_RE.finditer(prose):
                p = m.group(1)
                if p.startswith(GENERATED_PREFIXES) or "%" in p:
                    continue
                if not self.exists(p, near):
                    self.fail("%s:%d" % (rel, n), "names %s, which does not exist" % p)
            if rel.endswith(".md"):
                for m in LINK_RE.finditer(line):
                    target = m.group(1).split("#")[0]
                    if not target or re.match(r"^[a-z]+:", target) or target.startswith("/"):
                        continue
                    if not self.exists(target, near):
                        self.fail("%s:%d" % (rel, n), "links to %s, which does not exist" % target)

    def check_layout(self, readme):
        text = open(os.path.join(self.root, readme)).read()
        section = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
        named = []
        for line in section.splitlines():
            if line.startswith("| `"):
                named += re.findall(r"`([^`]+)`", line.split("|")[1])
        for p in named:
            if not self.exists(p.rstrip("/"), ""):
                self.fail(readme, "the layout table names %s, which does not exist" % p)
        covered = {p.rstrip("/") for p in named}
        for f in self.files:
            top = f.split("/")[0]
            if "/" not in f or top.startswith("."):
                continue
            # Every top-level folder, and every folder of tests/ and examples/, has a row.
            key = "/".join(f.split("/")[:2]) if top in ("tests", "examples") else top
            if not any(key == c or key.startswith(c + "/") or c.startswith(key + "/")
                       for c in covered):
                self.fail(readme, "the layout table has no row for %s%s" %
                          (key, "/" if key in self.dirs else ""))
                covered.add(key)

    def check_entry_points(self, readme, entries):
        """README's list of tracked entry points must be the table's (entries: its rows)."""
        text = open(os.path.join(self.root, readme)).read()
        m = re.search(ENTRY_POINTS_BLOCK, text, re.S)
        if not m:
            self.fail(readme, "has no list of tracked entry points (<!-- entry-points -->)")
            return
        table = {name for _, name in entries}
        listed = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", m.group(1)))
        for s in sorted(table - listed):
            self.fail(readme, "the entry-point list lacks %s, a row of shim/pg_entries.inc "
                      "(tests/docs/check_docs.py --write-entry-points rewrites the list)" % s)
        for s in sorted(listed - table):
            self.fail(readme, "the entry-point list names %s, which shim/pg_entries.inc does "
                      "not" % s)

    def check_folder_readmes(self, owned):
        for d in owned:
            readme = d + "/README.md"
            if readme not in self.files:
                self.fail(d + "/", "has no README.md")
                continue
            head = []  # the first lines, a list item's continuation lines joined to it
            for l in open(os.path.join(self.root, readme)).read().split("\n")[:14]:
                if l.startswith("  ") and head:
                    head[-1] += " " + l.strip()
                else:
                    head.append(l[2:] if l.startswith("- ") else l)
            owns = [l for l in head if l.startswith("**Owns:**")]
            calls = [l for l in head if l.startswith("**May call:**")]
            if not owns or not calls:
                self.fail(readme, "lacks its header: an **Owns:** line and a **May call:** line "
                          "at its top")
                continue
            allowed = set(re.findall(r"`([a-z]+)/`", calls[0]))
            # "`core/` through `core/pg_engine.h` only": core/ is reached through that header alone.
            doors = {}
            for lib, header in re.findall(r"`([a-z]+)/` through `\1/([A-Za-z0-9_.]+\.h)` only",
                                          calls[0]):
                doors.setdefault(lib, set()).add(header)
            reached = set()
            for f in self.files:
                if f.startswith(d + "/") and f.endswith((".c", ".h", ".S", ".inc", ".cu")):
                    src = open(os.path.join(self.root, f), errors="replace").read()
                    for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', src, re.M):
                        lib = self.library_of(inc, os.path.dirname(f))
                        if lib and not (d == lib or d.startswith(lib + "/")):
                            reached.add(lib)
                            if lib in doors and os.path.basename(inc) not in doors[lib]:
                                self.fail(readme, "**May call:** reaches `%s/` through %s only, "
                                          "but %s includes %s" %
                                          (lib, ", ".join(sorted(doors[lib])), f, inc))
            for lib in sorted(reached - allowed):
                self.fail(readme, "**May call:** does not name `%s/`, which %s/ includes" %
                          (lib, d))

    def library_of(self, inc, near):
        """The library folder a quoted #include resolves to, or None."""
        cands = [os.path.normpath(os.path.join(near, inc)), os.path.normpath(inc)]
        cands += [os.path.normpath(os.path.join(lib, inc)) for lib in LIBRARIES]
        for c in cands:
            if c in self.files:
                top = c.split("/")[0]
                return top if top in LIBRARIES else None
        return None


# What the checker must say of tests/docs/broken/ (with OWNED and LIBRARIES as there).
SELF_TEST_EXPECTED = [
    "src/a.c:1: names missing.h, which does not exist",
    "src/a.c:1: names src/b.c, which does not exist",
    "README.md:11: links to docs/DESIGN.md, which does not exist",
    "README.md: the layout table names gone/, which does not exist",
    "README.md: the layout table has no row for src/",
    "shim/README.md: lacks its header: an **Owns:** line and a **May call:** line at its top",
    "core/README.md: **May call:** does not name `tracker/`, which core/ includes",
    "tracker/README.md: **May call:** reaches `core/` through door.h only, but tracker/t.c "
    "includes ../core/y.h",
    "README.md: the entry-point list lacks cudaMissing, a row of shim/pg_entries.inc "
    "(tests/docs/check_docs.py --write-entry-points rewrites the list)",
    "README.md: the entry-point list names cudaStale, which shim/pg_entries.inc does not",
]
# The table the self-test's README is checked against (its list names cudaStale, not cudaMissing).
SELF_TEST_ENTRIES = [("cudart", "cudaListed"), ("cudart", "cudaMissing"), ("cuda", "cuListed")]


def check_tree(root, entries=None, owned=None):
    files = repo_files(root)
    ck = Checker(root, files)
    for rel in files:
        if not rel.endswith(TEXT_EXT) or rel.startswith("tests/docs/"):
            continue
        try:
            text = open(os.path.join(root, rel), encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        ck.check_names(rel, comments_only(rel, text))
    ck.check_layout("README.md")
    if entries:
        ck.check_entry_points("README.md", entries)
    ck.check_folder_readmes(OWNED if owned is None else owned)
    return ck.errors, len(files)


ENTRY_POINTS_BLOCK = r"<!-- entry-points -->\n(.*?)<!-- /entry-points -->"


def read_entries(program):
    """The table of entry points, as pg_entry_list prints it: (lib, name) per exported name."""
    out = subprocess.run([program], capture_output=True, text=True, check=True).stdout
    return [tuple(l.split()[:2]) for l in out.splitlines() if l.strip()]


def render_entry_points(entries):
    """README's list: a paragraph per layer, the names in ASCII order, wrapped at 100."""
    paras = []
    for lib, title in (("cudart", "Runtime"), ("cuda", "Driver")):
        names = sorted(n for l, n in entries if l == lib)
        words = ["`%s`," % n for n in names]
        words[-1] = words[-1][:-1] + "."
        lines, line = [], title + ":"
        for w in words:
            if len(line) + 1 + len(w) > 100:
                lines.append(line)
                line = w
            else:
                line += " " + w
        lines.append(line)
        paras.append("\n".join(lines) + "\n")
    return "\n".join(paras)


def write_entry_points(root, entries):
    path = os.path.join(root, "README.md")
    text = open(path).read()
    new = re.sub(ENTRY_POINTS_BLOCK,
                 lambda m: "<!-- entry-points -->\n" + render_entry_points(entries) +
                 "<!-- /entry-points -->", text, count=1, flags=re.S)
    if new != text:
        open(path, "w").write(new)
    print("README.md: the list of tracked entry points %s" %
          ("rewritten" if new != text else "was already the table's"))


def self_test():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "broken")
    errors, _ = check_tree(root, entries=SELF_TEST_ENTRIES, owned=["shim", "core", "tracker"])
    if sorted(errors) != sorted(SELF_TEST_EXPECTED):
        print("docs.check self-test: expected\n  %s\ngot\n  %s" %
              ("\n  ".join(sorted(SELF_TEST_EXPECTED)), "\n  ".join(sorted(errors))))
        return 1
    # The list --write-entry-points writes is one the check accepts.
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(os.path.join(root, "README.md"), tmp)
        ck = Checker(tmp, ["README.md"])
        write_entry_points(tmp, SELF_TEST_ENTRIES)
        ck.check_entry_points("README.md", SELF_TEST_ENTRIES)
        if ck.errors:
            print("docs.check self-test: the rewritten list is refused:\n  " +
                  "\n  ".join(ck.errors))
            return 1
    print("docs.check self-test: the broken tree gives exactly its %d problems, and a rewritten "
          "entry-point list passes" % len(errors))
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--entries", help="pg_entry_list, which prints the table of entry points")
    ap.add_argument("--write-entry-points", action="store_true",
                    help="rewrite README.md's list of tracked entry points from the table")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    entries = read_entries(args.entries) if args.entries else None
    if args.write_entry_points:
        if not entries:
            ap.error("--write-entry-points needs --entries")
        write_entry_points(os.path.abspath(args.root), entries)
        return 0
    errors, nfiles = check_tree(os.path.abspath(args.root), entries)
    for e in errors:
        print("docs.check: " + e)
    if errors:
        print("docs.check: %d problems" % len(errors))
        return 1
    print("docs.check: %d files checked, every name found" % nfiles)
    return 0


if __name__ == "__main__":
    sys.exit(main())
