"""Intent: `pinguard report` merges the JSON logs of many processes into counts per kind and per
call site (kind, access site, launch site: the same bug in two processes is one call site with
two reports), names the tests that were running, writes paths relative to --root, refuses text
logs, fails a CI run with --fail-on-reports, folds repeat lines
into their report's count, sums the stats_path counters files, and survives bad input: each bad
line is counted and skipped with a warning, an unreadable file makes the exit status 1, and
nothing crashes."""
import json
import os
import re
import tempfile

from common import check, e2e, main, pinguard

FREE, COMMIT = "free-during-device-access", "commit-during-device-write"


def merge():
    with tempfile.TemporaryDirectory() as logs:
        # (annotations reads the buffer after its audit-mode commit, while the copy is still in
        # flight: without guard pages that read goes unseen, leaving one report per process)
        runs = [("free_during_copy", "bug"), ("free_during_copy", "bug"),
                ("annotations", "bug", "commit"), ("free_during_copy", "fixed")]
        for prog, *args in runs:
            r = pinguard("run", "--no-guard", "--json", "--log", logs, "--", e2e(prog), *args)
            check(r.rc in (0, 23), "the run worked", r)
        # the fixed run writes its exit summary only: a process, with no report
        check(len(os.listdir(logs)) == 4, "four logs, got %s" % os.listdir(logs))
        r = pinguard("report", "--json", logs)
        check(r.rc == 0 and not r.err, "report --json succeeds quietly", r)
        m = json.loads(r.out)
        check(m["files"] == 4 and m["processes"] == 4 and m["reports"] == 3, "3 reports", r)
        check(m["call_sites"] == 2 and m["bad_lines"] == 0, "at 2 call sites", r)
        check(m["by_kind"][FREE] == {"reports": 2, "processes": 2, "call_sites": 1}, "free", r)
        check(m["by_kind"][COMMIT] == {"reports": 1, "processes": 1, "call_sites": 1}, "commit", r)
        top = m["sites"][0]
        # file:line where addr2line ran; module+offset where it cannot (a TSAN build of the shim)
        in_program = "free_during_copy.c" in top["site"] or "e2e_free_during_copy+" in top["site"]
        check(top["kind"] == FREE and top["reports"] == 2 and top["processes"] == 2 and
              in_program and "main" in top["site"],
              "the top offender is free_during_copy's cudaFreeHost call", r)
        check("free_during_copy.c" in top["launched_at"] or
              "e2e_free_during_copy+" in top["launched_at"], "launched at its cudaMemcpyAsync", r)
        check(m["waits"] == 0, "audit runs do not wait", r)

        r = pinguard("report", *[os.path.join(logs, n) for n in os.listdir(logs)])
        check(r.rc == 0, "the text form succeeds", r)
        check("4 processes from 4 files; 3 reports at 2 call sites" in r.out, "headline", r)
        for needle in ("reports by kind:", "top call sites:", FREE, COMMIT, "free_during_copy"):
            check(needle in r.out, "the table shows %r" % needle, r)
        r = pinguard("report", "--top", "1", logs)
        check("... and 1 more call sites" in r.out, "--top limits the listing", r)


def counters():
    """stats_path files (Prometheus text) in the same directory as the JSON logs: summed."""
    with tempfile.TemporaryDirectory() as d:
        for _ in range(2):
            r = pinguard("run", "--no-guard", "--json", "--log", d, "--options",
                         "stats_path=%s/:stats_interval_s=0" % d, "--",
                         e2e("free_during_copy"), "bug")
            check(r.rc == 23, "the run worked", r)
        proms = [n for n in os.listdir(d) if n.endswith(".prom")]
        check(len(proms) == 2, "one counters file per process, got %s" % os.listdir(d))
        with open(os.path.join(d, "pinguard.1.prom.tmp"), "w") as f:
            f.write("pinguard_copies_tracked_total{pid=\"1\"} 10")  # a half-written rewrite
        r = pinguard("report", "--json", d)
        m = json.loads(r.out)
        check(r.rc == 0 and not r.err, "report --json succeeds quietly", r)
        check(m["files"] == 2 and m["reports"] == 2 and m["stats_files"] == 2,
              "2 logs with 2 reports, and 2 counters files", r)
        c = m["counters"]
        check(c["pinguard_copies_tracked_total"] == 2, "one copy per process, summed", r)
        check(c["pinguard_reports_total"][FREE] == 2 and c["pinguard_reports_total"][COMMIT] == 0,
              "reports by kind, summed", r)
        check(c["pinguard_regions"] == 0 and c["pinguard_waits_total"] == 0, "gauges too", r)
        r = pinguard("report", d)
        check("counters (stats_path), summed over 2 files:" in r.out and
              re.search(r"pinguard_reports_total\{kind=%s\} +2\n" % FREE, r.out), "the text form lists them", r)


def _report(pid, rid, kind, site, line=10):
    return {"type": "report", "pid": pid, "id": rid, "kind": kind, "addr": "0x1000", "len": 8,
            "region": None, "access": {"what": "x", "thread": 1, "stack": []},
            "gpu": [{"what": "copy", "kernel": False, "direction": "device write",
                     "addr": "0x1000", "len": 8, "stream": "0x1", "age_ms": 1.0, "thread": 1,
                     "stack": [{"pc": "0x1", "module": "/lib/libcudart.so.13", "offset": "0x10",
                                "function": "cudaMemcpyAsync", "file": "", "line": 0},
                               {"pc": "0x2", "module": "/srv/engine", "offset": "0x20",
                                "function": "store", "file": "store.c", "line": 41}]}],
            "gpu_total": 1, "action": "none", "waited_ms": 0,
            "summary": "SUMMARY: pinguard: %s %s:%d in f" % (kind, site, line)}


def _write(path, objects, extra=b""):
    with open(path, "wb") as f:
        for o in objects:
            f.write((json.dumps(o) + "\n").encode())
        f.write(extra)


def repeats():
    with tempfile.TemporaryDirectory() as d:
        _write(os.path.join(d, "pinguard.100"), [
            _report(100, 1, FREE, "a.c"), _report(100, 2, COMMIT, "b.c"),
            {"type": "repeat", "pid": 100, "id": 1, "kind": FREE, "count": 5},
            {"type": "repeat", "pid": 100, "id": 9, "kind": COMMIT, "count": 3},
            {"type": "suppression", "pid": 100, "rule": "*:libfoo.so", "hits": 2},
            {"type": "summary", "pid": 100, "reports": 9, "suppressed": 2, "unique": 3,
             "printed": 2, "not_printed_max_reports": 0, "waits": 4, "wait_ms": 1.5}])
        # the same pid in another file is another process (pids are reused across runs)
        _write(os.path.join(d, "pinguard.200"), [
            _report(100, 1, FREE, "a.c"),
            {"type": "summary", "pid": 100, "reports": 1, "suppressed": 1, "unique": 1,
             "printed": 1, "not_printed_max_reports": 0, "waits": 1, "wait_ms": 0.25},
            {"type": "suppression", "pid": 100, "rule": "*:libfoo.so", "hits": 1}])
        r = pinguard("report", "--json", d)
        m = json.loads(r.out)
        check(r.rc == 0 and m["processes"] == 2, "two processes", r)
        sites = {(s["kind"], s["site"]): s for s in m["sites"]}
        check(sites[(FREE, "a.c:10 in f")]["reports"] == 6, "5 in one process + 1", r)
        check(sites[(FREE, "a.c:10 in f")]["processes"] == 2, "in two processes", r)
        check(sites[(COMMIT, "b.c:10 in f")]["reports"] == 1, "the commit once", r)
        check(sites[(COMMIT, "(report line missing)")]["reports"] == 3,
              "a repeat whose report is missing still counts", r)
        check(m["reports"] == 10 and m["suppressed"] == 3 and m["waits"] == 5 and
              m["wait_ms"] == 1.75, "totals", r)
        check(m["suppressions"] == [{"rule": "*:libfoo.so", "hits": 3}], "rule hits summed", r)
        check(sites[(FREE, "a.c:10 in f")]["launched_at"] == "store.c:41 in store",
              "the launch site skips the runtime's frames", r)


def bad_input():
    with tempfile.TemporaryDirectory() as d:
        good = os.path.join(d, "good")
        _write(good, [_report(1, 1, FREE, "a.c")])
        bad = os.path.join(d, "bad")
        _write(bad, [_report(2, 1, FREE, "a.c"), [1, 2], {"no": "type"}, {"type": "report",
               "pid": 2}, {"type": "report", "pid": "x", "kind": FREE},
               {"type": "repeat", "pid": 2, "id": 1, "count": "many"},
               {"type": "repeat", "pid": 2, "id": [1], "count": 2},
               {"type": "future-type", "pid": 2}],
               extra=b'{"type": "report", "pid": 2, "ki\n\xff\xfe\x00garbage\n'
                     b'==123==pinguard: ERROR: free-during-device-access on 0x1\n\n'
                     b'{"type":"report","pid":2,"id":3,"kind":"wait-during-capture",'
                     b'"summary":7,"gpu":"no"}')  # odd field types, no final newline
        empty = os.path.join(d, "empty")
        open(empty, "w").close()
        missing = os.path.join(d, "missing")
        r = pinguard("report", "--json", good, bad, empty, missing)
        check(r.rc == 1, "an unreadable file makes the status 1", r)
        check("Traceback" not in r.err, "no crash", r)
        m = json.loads(r.out)
        check(m["bad_lines"] == 9, "9 bad lines counted, got %d" % m["bad_lines"], r)
        check(r.err.count("line skipped") == 9, "each bad line warned about", r)
        check("a text log?" in r.err, "a text report line is recognised as such", r)
        check("missing: cannot read" in r.err, "the missing file is named", r)
        check(m["reports"] == 3 and m["by_kind"][FREE]["reports"] == 2 and
              m["by_kind"]["wait-during-capture"]["reports"] == 1,
              "the good lines still count", r)
        check(m["files"] == 3 and m["processes"] == 2, "3 files read, 2 processes", r)
        r = pinguard("report", bad, stdin="")
        check(r.rc == 0 and "2 processes" not in r.out and "3 reports" not in r.out and
              "2 reports" in r.out, "text output with bad lines", r)
        r = pinguard("report", "-", stdin="not json\n" * 30)
        check(r.rc == 0 and "30 bad lines" in r.out and "no reports" in r.out,
              "stdin of garbage: counted, summarised", r)
        check(r.err.count("line skipped") == 10 and "30 bad lines in all" in r.err,
              "warnings are capped", r)


def _launched(report, file, line):
    report["gpu"][0]["stack"][1].update(file=file, line=line)
    return report


def grouping():
    """Rows are (kind, access site, launch site): one access site reached by two launches is two
    rows. Each row names the tests that were running; --root makes paths relative."""
    with tempfile.TemporaryDirectory() as d:
        a = _launched(_report(1, 1, FREE, "/ck/src/a.c"), "/ck/src/store.c", 41)
        a["test"] = "tests/test_kv.py::test_store"
        b = _launched(_report(1, 2, FREE, "/ck/src/a.c"), "/ck/src/evict.c", 7)
        b["test"] = "tests/test_kv.py::test_evict"
        c = _launched(_report(2, 1, FREE, "/ck/src/a.c"), "/ck/src/store.c", 41)
        c["test"] = "tests/test_kv.py::test_store_many"
        _write(os.path.join(d, "pinguard.1"), [
            a, b, {"type": "repeat", "pid": 1, "id": 2, "kind": FREE, "count": 3}])
        _write(os.path.join(d, "pinguard.2"), [c])
        r = pinguard("report", "--json", "--root", "/ck", d)
        check(r.rc == 0, "report --json --root works", r)
        m = json.loads(r.out)
        rows = {(s["site"], s["launched_at"]): s for s in m["sites"]}
        check(set(rows) == {("src/a.c:10 in f", "src/store.c:41 in store"),
                            ("src/a.c:10 in f", "src/evict.c:7 in store")},
              "two rows for two launch sites, paths relative to --root: %s" % list(rows), r)
        store = rows[("src/a.c:10 in f", "src/store.c:41 in store")]
        check(store["reports"] == 2 and store["tests"] == ["tests/test_kv.py::test_store",
                                                           "tests/test_kv.py::test_store_many"],
              "the store row names both tests", r)
        evict = rows[("src/a.c:10 in f", "src/evict.c:7 in store")]
        check(evict["reports"] == 3 and evict["tests"] == ["tests/test_kv.py::test_evict"],
              "repeats count under their report's test", r)
        check(m["tests"][0] == {"test": "tests/test_kv.py::test_evict", "reports": 3},
              "reports by test", r)
        r = pinguard("report", "--root", "/ck/", d)
        check("reports by test" in r.out and "tests/test_kv.py::test_store +1 more" in r.out and
              "src/evict.c:7 in store" in r.out and "/ck/" not in r.out,
              "the text form shows tests and relative paths", r)


TEXT_REPORT = ("==%d==pinguard: ERROR: free-during-device-access on 0x1000 (no known pinned "
               "region)\n  cudaFreeHost (thread T1):\n    #0 0x1 in main a.c:3\n"
               "SUMMARY: pinguard: free-during-device-access a.c:3 in main\n")


def text_log():
    """A text log (log_format=text) is refused with an error naming it and status 1, never
    summarised as "no reports"."""
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "pinguard.7")
        with open(log, "w") as f:
            f.write("".join(TEXT_REPORT % 7 for _ in range(3)))
            f.write("pinguard: 3 reports (0 suppressed), 0 waits totalling 0.000 ms\n")
        for args in ([log], ["--json", log], ["--fail-on-reports", d]):
            r = pinguard("report", *args)
            check(r.rc == 1 and "%s is a text log (3 text reports)" % log in r.err and
                  "--json" in r.err, "%s: refused with status 1 and a clear error" % args, r)
            check("\nno reports\n" not in r.out + "\n", "never 'no reports'", r)
        r = pinguard("report", log)
        check("1 text log not read" in r.out, "the summary says a log was not read", r)


def fail_on_reports():
    """--fail-on-reports: status 23 when anything unsuppressed was reported, 0 otherwise
    (suppressed reports, or none)."""
    with tempfile.TemporaryDirectory() as d:
        bad, quiet = os.path.join(d, "bad"), os.path.join(d, "quiet")
        os.mkdir(bad)
        os.mkdir(quiet)
        _write(os.path.join(bad, "pinguard.1"), [_report(1, 1, FREE, "a.c")])
        _write(os.path.join(quiet, "pinguard.2"), [
            {"type": "suppression", "pid": 2, "rule": "*:a.c", "hits": 4},
            {"type": "summary", "pid": 2, "reports": 0, "suppressed": 4, "unique": 0,
             "printed": 0, "not_printed_max_reports": 0, "waits": 0, "wait_ms": 0}])
        r = pinguard("report", "--fail-on-reports", bad)
        check(r.rc == 23 and "1 report not suppressed" in r.err, "reports fail the verdict", r)
        r = pinguard("report", bad)
        check(r.rc == 0, "without the flag the status is 0", r)
        r = pinguard("report", "--fail-on-reports", "--json", quiet)
        check(r.rc == 0 and json.loads(r.out)["suppressed"] == 4,
              "suppressed reports alone pass", r)


def top_negative():
    # Intent: --top takes a count; a negative one is refused with a clear error and status 2
    # (argparse's usage error), never accepted silently.
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "pinguard.1")
        _write(log, [_report(1, 1, FREE, "a.c")])
        for bad in ("-1", "-5", "x"):
            r = pinguard("report", "--top", bad, log)
            check(r.rc == 2 and "--top" in r.err and "whole number >= 0" in r.err and not r.out,
                  "--top %s is refused" % bad, r)
        r = pinguard("report", "--top", "0", "--json", log)
        check(r.rc == 0 and json.loads(r.out)["reports"] == 1, "--top 0 still lists all", r)


main({"merge": merge, "repeats": repeats, "bad_input": bad_input, "top_negative": top_negative,
      "counters": counters, "grouping": grouping, "text_log": text_log,
      "fail_on_reports": fail_on_reports})
