"""test_reports.py: the incident's reports read as a Python engineer needs them (issue 14):
  - the store bug is one report with a repeat count; its CPU stack names the user's
    commit_store with kv_engine.py and the line of pickle.dumps, its launch stack the user's
    gather_paged_kv_to_cpu, and nothing in it is a mangled C++ name;
  - the retrieve bug's report names the user's line that calls pin_memory().
Both run under audit with pinguard's default options (python_stacks=auto is on).
  - under enforce with its default options (python_stacks=auto is on there too), the store bug's
    SUMMARY names the pickle.dumps line, its launch stack the user's gather_paged_kv_to_cpu, and
    no pinguard frame appears."""
import os
import re

from conftest import HERE, run

ENGINE = os.path.join(HERE, "kv_engine.py")


def engine_line(needle, function):
    """The line of kv_engine.py inside `function` whose text contains `needle`."""
    inside = False
    with open(ENGINE) as f:
        for no, text in enumerate(f, 1):
            if text.startswith("def "):
                inside = text.startswith("def %s(" % function)
            if inside and needle in text:
                return no
    raise AssertionError("no %r in %s" % (needle, function))


def sections(report):
    """{header: stack text} of one report ("CPU read (thread T1)", "in-flight GPU access: ...")."""
    out, head = {}, None
    for line in report.splitlines()[1:]:
        if re.match(r"^  \S", line):
            head = line.strip()
            out[head] = ""
        elif head is not None:
            out[head] += line + "\n"
    return out


def frame_re(line, function):
    return re.compile(r"#\d+ \S*kv_engine\.py:%d in %s(\.<locals>\.\S+)?\n" %
                      (line, re.escape(function)))


MANGLED = re.compile(r"(?<![\w.])_Z[A-Za-z0-9_]{3,}")


def test_store_report_names_the_users_code():
    r = run(["store"], mode="audit")
    assert r.rc == 23, r.explain()
    texts = r.report_texts("cpu-read-during-device-write")
    assert len(texts) == 1, "%d reports for one bug\n%s" % (len(texts), r.explain())
    assert re.search(r"report #1 \(cpu-read-during-device-write\) happened \d+ times", r.stderr), \
        r.explain()
    report = texts[0]
    sec = sections(report)
    cpu = [t for h, t in sec.items() if h.startswith("CPU read")]
    launch = [t for h, t in sec.items() if h.startswith("in-flight GPU access")]
    assert cpu and launch, report
    pickle_line = engine_line("pickle.dumps", "commit_store")
    assert frame_re(pickle_line, "commit_store").search(cpu[0]), report
    launch_line = engine_line("cache._launch(", "gather_paged_kv_to_cpu")
    assert frame_re(launch_line, "gather_paged_kv_to_cpu").search(launch[0]), report
    assert not MANGLED.search(report), MANGLED.findall(report)
    assert re.search(r"SUMMARY: pinguard: cpu-read-during-device-write \S*kv_engine\.py:%d in "
                     r"commit_store" % pickle_line, report), report


def test_enforce_summary_names_the_users_line_with_default_options():
    """Enforce with its default options (python_stacks=auto, on in enforce too): the SUMMARY
    names kv_engine.py's pickle.dumps line, the launch stack the user's gather_paged_kv_to_cpu
    (the Python frames of the launch, captured when it was tracked), and no pinguard frame
    appears in any stack."""
    r = run(["store"], mode="enforce")
    assert r.rc == 0 and r["corrupted_blocks"] == 0, r.explain()
    texts = r.report_texts("cpu-read-during-device-write")
    assert texts, r.explain()
    pickle_line = engine_line("pickle.dumps", "commit_store")
    launch_line = engine_line("cache._launch(", "gather_paged_kv_to_cpu")
    for report in texts:
        assert re.search(r"SUMMARY: pinguard: cpu-read-during-device-write \S*kv_engine\.py:%d in "
                         r"commit_store" % pickle_line, report), report
        launch = [t for h, t in sections(report).items() if h.startswith("in-flight GPU access")]
        assert launch and frame_re(launch_line, "gather_paged_kv_to_cpu").search(launch[0]), report
        assert "libpinguard" not in report, report
        # Prevented either way: enforce waited for the kernel, or it had completed by then (a
        # loaded machine's CPU can come 20 ms late), with nothing left to wait for.
        assert ("enforce: waited" in report or
                "enforce: no wait needed, the conflicting GPU work had completed" in report), report
    assert "libpinguard" not in r.stderr, r.explain()


def test_retrieve_report_names_pin_memory_in_the_users_code():
    r = run(["retrieve"], mode="audit")
    assert r.rc == 23, r.explain()
    texts = r.report_texts("cpu-write-during-device-access")
    pin_line = engine_line(".pin_memory()", "scatter_cpu_to_paged_kv")
    named = [t for t in texts
             if frame_re(pin_line, "scatter_cpu_to_paged_kv").search(
                 "".join(s for h, s in sections(t).items() if h.startswith("CPU write")))]
    assert named, "no report's CPU stack names kv_engine.py:%d\n%s" % (pin_line, r.explain())
    assert "pin_memory" in named[0], named[0]
