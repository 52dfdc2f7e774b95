"""report.py: `pinguard report`: merges the JSON logs of many processes (policy/README.md gives
the line types) into counts per kind and per call site (kind, access site, launch site), with the
tests that were running, and sums the production counters files that stats_path= writes
(Prometheus text, one file per process). A log is input from crashed or killed processes too, so
a bad line is counted, warned about and skipped, never fatal; a text log (log_format=text) is
refused with an error, never read as "no reports". --fail-on-reports makes it a CI verdict."""
import argparse
import json
import os
import re
import sys

SUMMARY_PREFIX = "SUMMARY: pinguard: "
# Frames that are never "the call site" (the same list as policy/pg_report_format.c).
_RUNTIME_MODULES = ("libc.so", "libc-", "ld-linux", "libpthread", "libpinguard", "libcudart",
                    "libcuda.so")
_MAX_WARNINGS = 10  # per run; the rest are only counted
# A text report's first line, and its SUMMARY line: what marks a text log.
_TEXT_REPORT = re.compile(rb"^==\d+==pinguard: ERROR: |^SUMMARY: pinguard: ")
# --fail-on-reports: the status when unsuppressed reports were found (pinguard's own exitcode).
FAIL_STATUS = 23
# A sample line of a stats_path file: name{pid="N"[,kind="k"]} value
_SAMPLE = re.compile(r'^(pinguard_[a-z_]+)\{([^}]*)\} ([0-9]+(?:\.[0-9]+)?)$')
_LABEL = re.compile(r'([a-z_]+)="([^"\\]*)"')


def _count(text):
    """--top's value: a whole number >= 0 (0 lists every call site)."""
    try:
        n = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a whole number >= 0, got %r" % text)
    if n < 0:
        raise argparse.ArgumentTypeError("expected a whole number >= 0 (0: all), got %d" % n)
    return n


def add_arguments(parser):
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="JSON log files (pinguard.<pid>), directories of them, or - for "
                             "standard input")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of "
                                                            "tables")
    parser.add_argument("--top", type=_count, default=10, metavar="N",
                        help="call sites to list, most frequent first (default 10, 0: all)")
    parser.add_argument("--root", metavar="DIR",
                        help="print paths under DIR relative to it, so that the logs of "
                             "checkouts in different places group alike")
    parser.add_argument("--fail-on-reports", action="store_true",
                        help="exit with status %d when any unsuppressed report was found (a CI "
                             "verdict); suppressed ones do not count" % FAIL_STATUS)


class _Site:
    """One (kind, violating call site, launch site), summed over processes."""

    def __init__(self, kind, site, launched_at, example):
        self.kind, self.site, self.launched_at = kind, site, launched_at
        self.reports = 0
        self.processes = set()
        self.tests = {}  # test name -> reports made while it ran
        self.example = example


class Merge:
    """Accumulates log lines; `result()` gives the merged counts as plain data."""

    def __init__(self, warn, root=None):
        self.warn = warn
        self.root = os.path.abspath(root) + os.sep if root else None
        self.text_logs = []  # (name, text reports): refused
        self.files = 0
        self.unreadable = 0
        self.bad_lines = 0
        self.other_lines = 0
        self.processes = set()  # (file, pid): a pid can be reused across runs
        self.sites = {}  # (kind, site, launched_at) -> _Site
        self.printed = {}  # (file, pid, id) -> _Site, for repeat lines
        self.counted = {}  # (file, pid, id) -> occurrences already added
        self.printed_tests = {}  # (file, pid, id) -> the test its report named
        self.suppressions = {}
        self.summaries = {"suppressed": 0, "not_printed_max_reports": 0, "waits": 0,
                          "wait_ms": 0.0, "processes": 0}
        self.limited_processes = 0
        self.stats_files = 0
        self.counters = {}  # name -> summed value; pinguard_reports_total -> {kind: sum}

    # ---- input ------------------------------------------------------------------------------
    def add_path(self, path):
        if path == "-":
            self._add_stream("<stdin>", sys.stdin.buffer)
            return
        if os.path.isdir(path):
            # (a stats file's *.tmp is the writer's half-written next version: skipped)
            names = sorted(n for n in os.listdir(path) if os.path.isfile(os.path.join(path, n))
                           and not n.endswith(".prom.tmp"))
            if not names:
                self.warn("%s: directory holds no log files" % path)
            for name in names:
                self.add_path(os.path.join(path, name))
            return
        try:
            with open(path, "rb") as f:
                self._add_stream(path, f)
        except OSError as e:
            self.unreadable += 1
            self.warn("%s: cannot read: %s" % (path, e.strerror), always=True)

    def _add_stream(self, name, stream):
        lines = iter(stream)
        first = next(lines, b"")
        if first.startswith((b"# HELP pinguard_", b"# TYPE pinguard_", b"pinguard_")):
            self._add_counters(name, first, lines)
            return
        self.files += 1
        text_reports = good = 0
        skipped = []
        for number, raw in enumerate(_chain(first, lines), 1):
            if not raw.strip():
                continue
            if _TEXT_REPORT.match(raw):
                text_reports += raw.startswith(b"==")
            problem = self._add_line(name, raw)
            if problem:
                skipped.append("%s:%d: %s; line skipped" % (name, number, problem))
            else:
                good += 1
        if text_reports and not good:
            # A log written with log_format=text: its reports cannot be merged, and must never
            # pass for "no reports".
            self.files -= 1
            self.text_logs.append((name, text_reports))
            return
        self.bad_lines += len(skipped)
        for message in skipped:
            self.warn(message)

    def _add_line(self, name, raw):
        try:
            obj = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            return "not UTF-8 text"
        except ValueError:
            text = raw[:40].decode("utf-8", "replace")
            if "pinguard" in text or text.startswith("=="):
                return "not JSON (a text log? run with --json / log_format=json)"
            return "not JSON"
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            return "not a pinguard log object (no \"type\")"
        pid = obj.get("pid")
        if not isinstance(pid, int) or isinstance(pid, bool):
            return "no integer \"pid\""
        handler = getattr(self, "_on_" + obj["type"], None)
        if handler is None:
            self.other_lines += 1  # a newer shim's line type: not an error
            self.processes.add((name, pid))
            return None
        try:
            problem = handler(name, pid, obj)
        except (TypeError, ValueError, AttributeError) as e:
            # A field of a type no shim writes: the line is bad, the merge goes on.
            problem = "unexpected field contents (%s)" % e
        if not problem:
            self.processes.add((name, pid))
        return problem

    def _add_counters(self, name, first, lines):
        """A stats_path file: its samples are added to the sums (a gauge's sum is the total over
        processes, e.g. pinned regions held by all of them)."""
        self.stats_files += 1
        for number, raw in enumerate(_chain(first, lines), 1):
            text = raw.decode("utf-8", "replace").strip()
            if not text or text.startswith("#"):
                continue
            m = _SAMPLE.match(text)
            if not m:
                self.bad_lines += 1
                self.warn("%s:%d: not a pinguard counter sample; line skipped" % (name, number))
                continue
            metric, labels, value = m.group(1), dict(_LABEL.findall(m.group(2))), m.group(3)
            value = float(value) if "." in value else int(value)
            if "kind" in labels:
                per_kind = self.counters.setdefault(metric, {})
                per_kind[labels["kind"]] = per_kind.get(labels["kind"], 0) + value
            else:
                self.counters[metric] = self.counters.get(metric, 0) + value

    # ---- line types -------------------------------------------------------------------------
    def _on_report(self, name, pid, obj):
        kind = obj.get("kind")
        if not isinstance(kind, str) or not kind:
            return "report without a \"kind\""
        site = self.relative(call_site(obj.get("summary"), kind))
        launched = self.relative(launch_site(obj.get("gpu")))
        key = (kind, site, launched)
        entry = self.sites.get(key)
        if entry is None:
            example = {"file": name, "pid": pid, "id": obj.get("id"),
                       "summary": obj.get("summary") if isinstance(obj.get("summary"), str)
                       else None}
            entry = self.sites[key] = _Site(kind, site, launched, example)
        entry.reports += 1
        entry.processes.add((name, pid))
        test = obj.get("test")
        if isinstance(test, str) and test:
            entry.tests[test] = entry.tests.get(test, 0) + 1
        rid = obj.get("id")
        if isinstance(rid, int):
            self.printed[(name, pid, rid)] = entry
            self.counted[(name, pid, rid)] = 1
            if isinstance(test, str) and test:
                self.printed_tests[(name, pid, rid)] = test
        return None

    def relative(self, text):
        """text with every path under --root written relative to it."""
        return text.replace(self.root, "") if self.root and text else text

    def _on_repeat(self, name, pid, obj):
        rid, count = obj.get("id"), obj.get("count")
        if not isinstance(count, int) or count < 1 or not isinstance(rid, int):
            return "repeat without an integer \"id\" and a positive \"count\""
        entry = self.printed.get((name, pid, rid))
        if entry is None:  # its report line is missing (cut log): count it under its kind
            kind = obj.get("kind") if isinstance(obj.get("kind"), str) else "unknown"
            key = (kind, "(report line missing)", "")
            if key not in self.sites:
                self.sites[key] = _Site(kind, key[1], "", {"file": name, "pid": pid, "id": rid})
            entry = self.sites[key]
            entry.reports += count
            entry.processes.add((name, pid))
            return None
        already = self.counted[(name, pid, rid)]
        if count > already:  # `count` includes the printed occurrence
            entry.reports += count - already
            self.counted[(name, pid, rid)] = count
            # the repeats are counted under the printed report's test: they are not named
            test = self.printed_tests.get((name, pid, rid))
            if test:
                entry.tests[test] += count - already
        return None

    def _on_summary(self, name, pid, obj):
        s = self.summaries
        s["processes"] += 1
        for key in ("suppressed", "not_printed_max_reports", "waits"):
            value = obj.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                s[key] += value
        if isinstance(obj.get("wait_ms"), (int, float)):
            s["wait_ms"] += obj["wait_ms"]
        return None

    def _on_suppression(self, name, pid, obj):
        rule, hits = obj.get("rule"), obj.get("hits")
        if not isinstance(rule, str) or not isinstance(hits, int):
            return "suppression without \"rule\" and \"hits\""
        self.suppressions[rule] = self.suppressions.get(rule, 0) + hits
        return None

    def _on_limit(self, name, pid, obj):
        self.limited_processes += 1
        return None

    def _on_stats(self, name, pid, obj):
        return None

    # ---- output -----------------------------------------------------------------------------
    def result(self, top):
        sites = sorted(self.sites.values(), key=lambda e: (-e.reports, e.kind, e.site))
        by_kind = {}
        for e in sites:
            k = by_kind.setdefault(e.kind, {"reports": 0, "processes": set(), "sites": 0})
            k["reports"] += e.reports
            k["processes"] |= e.processes
            k["sites"] += 1
        kinds = sorted(by_kind.items(), key=lambda kv: (-kv[1]["reports"], kv[0]))
        shown = sites if top <= 0 else sites[:top]
        tests = {}
        for e in sites:
            for t, n in e.tests.items():
                tests[t] = tests.get(t, 0) + n
        return {
            "files": self.files,
            "unreadable_files": self.unreadable,
            "processes": len(self.processes),
            "reports": sum(e.reports for e in sites),
            "call_sites": len(sites),
            "suppressed": self.summaries["suppressed"],
            "not_printed_max_reports": self.summaries["not_printed_max_reports"],
            "waits": self.summaries["waits"],
            "wait_ms": round(self.summaries["wait_ms"], 3),
            "bad_lines": self.bad_lines,
            "by_kind": {k: {"reports": v["reports"], "processes": len(v["processes"]),
                            "call_sites": v["sites"]} for k, v in kinds},
            "sites": [{"kind": e.kind, "site": e.site, "launched_at": e.launched_at,
                       "reports": e.reports, "processes": len(e.processes),
                       "tests": sorted(e.tests), "example": e.example} for e in shown],
            "sites_not_shown": len(sites) - len(shown),
            "tests": [{"test": t, "reports": n} for t, n in
                      sorted(tests.items(), key=lambda kv: (-kv[1], kv[0]))],
            "text_logs": [{"file": f, "text_reports": n} for f, n in self.text_logs],
            "suppressions": [{"rule": r, "hits": h} for r, h in sorted(self.suppressions.items())],
            "stats_files": self.stats_files,
            "counters": {k: (round(v, 9) if isinstance(v, float) else v)
                         for k, v in sorted(self.counters.items())},
        }


def _chain(first, rest):
    if first:
        yield first
    for line in rest:
        yield line


def call_site(summary, kind):
    """The violating call site named by a report's SUMMARY line ("file:line in function"), which
    stays the same across processes, unlike addresses."""
    if not isinstance(summary, str):
        return "(unknown)"
    rest = summary[len(SUMMARY_PREFIX):] if summary.startswith(SUMMARY_PREFIX) else summary
    if rest.startswith(kind):
        rest = rest[len(kind):]
    return rest.strip() or "(unknown)"


def _frame_text(frame):
    function = frame.get("function") or ""
    if frame.get("file") and frame.get("line"):
        where = "%s:%s" % (frame["file"], frame["line"])
    elif frame.get("module"):
        where = "%s+%s" % (os.path.basename(str(frame["module"])), frame.get("offset", "?"))
    else:
        where = str(frame.get("pc", "?"))
    return "%s in %s" % (where, function) if function else where


def launch_site(gpu):
    """Where the first in-flight GPU access was enqueued: its first Python frame in the program's
    own files when it has Python frames, else its first native frame outside the runtime."""
    if not isinstance(gpu, list) or not gpu or not isinstance(gpu[0], dict):
        return ""
    py = gpu[0].get("python_stack")
    py = [f for f in py if isinstance(f, dict) and f.get("file")] if isinstance(py, list) else []
    if py:  # the launching Python frame: the first in the program's own files
        own = [f for f in py if not re.search(r"/(site|dist)-packages/|/lib/python|^<",
                                               str(f["file"]))]
        return _frame_text(own[0] if own else py[0])
    stack = gpu[0].get("stack")
    frames = [f for f in stack if isinstance(f, dict)] if isinstance(stack, list) else []
    for frame in frames:
        module = os.path.basename(str(frame.get("module") or ""))
        if module and not module.startswith(_RUNTIME_MODULES):
            return _frame_text(frame)
    return _frame_text(frames[0]) if frames else ""


def _cut(text, width):
    return text if len(text) <= width else text[:width - 3] + "..."


def _table(header, rows, right):
    """Columns sized to their content; `right` names the right-aligned (numeric) columns."""
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    lines = []
    for r in [header] + rows:
        cells = [str(c).rjust(w) if i in right else str(c).ljust(w)
                 for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def plural(n, word, words=None):
    return "%d %s" % (n, word if n == 1 else (words or word + "s"))


def _tests_cell(tests):
    if not tests:
        return "-"
    return _cut(tests[0], 50) + (" +%d more" % (len(tests) - 1) if len(tests) > 1 else "")


def format_text(r):
    out = ["pinguard report: %s from %s; %s at %s, %d suppressed; %s totalling %.3f ms"
           % (plural(r["processes"], "process", "processes"),
              plural(r["files"], "file"), plural(r["reports"], "report"),
              plural(r["call_sites"], "call site"), r["suppressed"], plural(r["waits"], "wait"),
              r["wait_ms"])]
    if r["bad_lines"]:
        out.append("(%s skipped)" % plural(r["bad_lines"], "bad line"))
    if r["not_printed_max_reports"]:
        out.append("(%d reports were not printed by their process: max_reports)"
                   % r["not_printed_max_reports"])
    if r["text_logs"]:
        out.append("(%s not read: written with log_format=text, %d text reports in all; "
                   "run with --json)" % (plural(len(r["text_logs"]), "text log"),
                                         sum(t["text_reports"] for t in r["text_logs"])))
    if not r["reports"]:
        out.append("no reports in JSON logs" if r["text_logs"] else "no reports")
    else:
        out += ["", "reports by kind:"]
        out += _table(("kind", "reports", "processes", "call sites"),
                      [(k, v["reports"], v["processes"], v["call_sites"])
                       for k, v in r["by_kind"].items()], right={1, 2, 3})
        out += ["", "top call sites:"]
        out += _table(("#", "reports", "procs", "kind", "call site", "launched at", "tests"),
                      [(i, s["reports"], s["processes"], s["kind"], _cut(s["site"], 60),
                        _cut(s["launched_at"] or "-", 60), _tests_cell(s["tests"]))
                       for i, s in enumerate(r["sites"], 1)], right={0, 1, 2})
        if r["sites_not_shown"]:
            out.append("  ... and %d more call sites (--top 0 lists all)" % r["sites_not_shown"])
        if r["tests"]:
            out += ["", "reports by test (PYTEST_CURRENT_TEST when the report was made):"]
            out += _table(("reports", "test"), [(t["reports"], t["test"]) for t in r["tests"]],
                          right={0})
    if r["stats_files"]:
        out += ["", "counters (stats_path), summed over %s:" % plural(r["stats_files"], "file")]
        rows = []
        for k, v in r["counters"].items():
            if isinstance(v, dict):
                rows += [("%s{kind=%s}" % (k, kind), n) for kind, n in sorted(v.items()) if n]
            else:
                rows.append((k, v))
        out += _table(("counter", "value"), rows, right={1})
    if r["suppressions"]:
        out += ["", "suppressions:"]
        out += _table(("hits", "rule"), [(s["hits"], s["rule"]) for s in r["suppressions"]],
                      right={0})
    return "\n".join(out)


def main(args):
    warnings = [0]

    def warn(message, always=False):
        warnings[0] += 1
        if always or warnings[0] <= _MAX_WARNINGS:
            print("pinguard: report: warning: %s" % message, file=sys.stderr)

    merge = Merge(warn, getattr(args, "root", None))
    for path in args.files:
        merge.add_path(path)
    for name, n in merge.text_logs:
        print("pinguard: report: error: %s is a text log (%s): pinguard report reads JSON "
              "logs; run with --json (log_format=json)" % (name, plural(n, "text report")),
              file=sys.stderr)
    if merge.bad_lines > _MAX_WARNINGS:
        print("pinguard: report: warning: %d bad lines in all (first %d shown)"
              % (merge.bad_lines, _MAX_WARNINGS), file=sys.stderr)
    result = merge.result(args.top)
    if args.json:
        print(json.dumps(result, indent=1, sort_keys=False))
    else:
        print(format_text(result))
    if merge.unreadable or merge.text_logs:
        return 1
    if getattr(args, "fail_on_reports", False) and result["reports"]:
        print("pinguard: report: %s not suppressed: failing (--fail-on-reports)"
              % plural(result["reports"], "report"), file=sys.stderr)
        return FAIL_STATUS
    return 0
