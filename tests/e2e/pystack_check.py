"""pystack_check.py PYTHON HELPER [--unknown|--enforce]: runs pystack.py under PYTHON with
pinguard preloaded (PG_PRELOAD) in audit, and checks that each report's stacks name the Python
frames pystack.py marks with "# site:" comments: file, line and function, in the right section.
With --unknown (a CPython pinguard does not read): one notice, and native frames only. With
--enforce: enforce with its default options, where launches capture Python frames as in audit
(python_stacks=auto is on there too): each report's CPU side (the guard fault's read, on the
main thread and on a threading.Thread, and the free) names the Python line, the SUMMARY names
it, and the launch stack names the launching line; then enforce with python_stacks=0, where no
launch captures Python frames, yet each report's CPU side is read at report time and named the
same way. No pinguard frame appears in any stack."""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "pystack.py")


def sites():
    out = {}
    with open(SCRIPT) as f:
        for no, line in enumerate(f, 1):
            m = re.search(r"# site: (\S+)", line)
            if m:
                out[m.group(1)] = no
    return out


def sections(block):
    """{header: text} of one report: "CPU read (thread T1)", "in-flight GPU access: ...", ..."""
    out, head = {}, None
    for line in block.splitlines()[1:]:
        if re.match(r"^  \S", line):
            head = line.strip()
            out[head] = ""
        elif head is not None:
            out[head] += line + "\n"
    return out


def main():
    python, helper = sys.argv[1], sys.argv[2]
    env = dict(os.environ)
    env["LD_PRELOAD"] = env["PG_PRELOAD"]
    env["PINGUARD_OPTIONS"] = "mode=audit:guard=1:guard_min_bytes=4096"
    env["SIMCUDA_LATENCY_US"] = "300000"  # every copy is still in flight at the violation
    p = subprocess.run([python, SCRIPT, helper], env=env, capture_output=True, text=True,
                       timeout=120)
    err = p.stderr
    fail = []

    def need(cond, what):
        if not cond:
            fail.append(what)

    if "--enforce" in sys.argv[3:]:
        return check_enforce(python, helper, env)
    need(p.returncode == 23, "exit status %d, want 23" % p.returncode)
    need("pystack done" in p.stdout, "the script did not finish")
    if "--unknown" in sys.argv[3:]:
        # A version pinguard does not read: one notice, then native frames only.
        notes = re.findall(r"WARNING: Python 3\.\d+ is not a version pinguard can read", err)
        need(len(notes) == 1, "%d version notices, want 1" % len(notes))
        need(re.search(r"#\d+ 0x[0-9a-f]+ in pysh_read", err), "no native frame names pysh_read")
        need(not re.search(r"(?m)^    #\d+ [^0]", err), "a frame that is not native")
        need(len(re.findall(r"pinguard: ERROR: ", err)) >= 2, "fewer than 2 reports")
        return finish(python, fail, p, err, "native frames only")
    need("WARNING: Python" not in err and "WARNING: this Python" not in err,
         "a version notice for a known version")
    at = sites()
    qual = "Engine.launch_copy"
    ver = subprocess.run([python, "-c", "import sys; print(sys.version_info[1])"],
                         capture_output=True, text=True).stdout.strip()
    if ver and int(ver) < 11:
        qual = "launch_copy"  # co_qualname is 3.11's
    blocks = [b for b in re.split(r"(?m)^(?===\d+==pinguard: ERROR: )", err) if b.startswith("==")]

    def frame(site, func):
        return re.compile(r"#\d+ \S*pystack\.py:%d in %s\n" % (at[site], re.escape(func)))

    def find(kind, access_head, site, func):
        for b in blocks:
            if (" ERROR: %s " % kind) not in b:
                continue
            sec = sections(b)
            acc = [t for h, t in sec.items() if h.startswith(access_head)]
            gpu = [t for h, t in sec.items() if h.startswith("in-flight GPU access")]
            if acc and frame(site, func).search(acc[0]):
                return acc[0], (gpu[0] if gpu else ""), b
        return None, None, None

    acc, gpu, b = find("cpu-read-during-device-write", "CPU read", "read", "read_back")
    need(acc is not None, "no cpu-read report names pystack.py:%d in read_back" % at["read"])
    if acc:
        need(re.search(r"pystack\.py:\d+ in main\n", acc) and "in <module>" in acc,
             "the CPU stack lacks the outer frames (main, <module>)")
        need(frame("launch", qual).search(gpu), "the launch stack lacks pystack.py:%d in %s"
             % (at["launch"], qual))
        need(re.search(r"SUMMARY: pinguard: cpu-read-during-device-write \S*pystack\.py:%d in "
                       r"read_back" % at["read"], b), "the summary does not name read_back")
    acc, gpu, _ = find("cpu-read-during-device-write", "CPU read", "thread-read",
                       "read_back_threaded")
    need(acc is not None, "no report from the thread names read_back_threaded")
    if acc:
        need(re.search(r"threading\.py:\d+ in \S*run\n", acc), "the thread's stack lacks "
             "threading's frames")
    acc, gpu, _ = find("free-during-device-access", "cudaFreeHost", "free", "free_early")
    need(acc is not None, "no free report names pystack.py:%d in free_early" % at["free"])
    if acc:
        need(frame("launch", qual).search(gpu), "the free's launch stack lacks launch_copy")
    check_json(python, helper, env, at, qual, need)
    return finish(python, fail, p, err, "%d reports with Python frames" % len(blocks))


def check_enforce(python, helper, env):
    rc = 0
    for launch_frames in (True, False):
        rc |= check_enforce_run(python, helper, env, launch_frames)
    return rc


def check_enforce_run(python, helper, env, launch_frames):
    env = dict(env)
    env["PINGUARD_OPTIONS"] = "mode=enforce:guard=1:guard_min_bytes=4096"
    if not launch_frames:
        env["PINGUARD_OPTIONS"] += ":python_stacks=0"
    p = subprocess.run([python, SCRIPT, helper], env=env, capture_output=True, text=True,
                       timeout=120)
    err, fail, at = p.stderr, [], sites()

    def need(cond, what):
        if not cond:
            fail.append(what)

    need(p.returncode == 0, "exit status %d, want 0 (every violation waited for)" % p.returncode)
    need("pystack done" in p.stdout, "the script did not finish")
    blocks = [b for b in re.split(r"(?m)^(?===\d+==pinguard: ERROR: )", err) if b.startswith("==")]
    need(len(blocks) >= 3, "%d reports, want 3" % len(blocks))
    need("libpinguard" not in err, "a pinguard frame in a stack")
    want = [("cpu-read-during-device-write", "CPU read", "read", "read_back"),
            ("cpu-read-during-device-write", "CPU read", "thread-read", "read_back_threaded"),
            ("free-during-device-access", "cudaFreeHost", "free", "free_early")]
    for kind, head, site, func in want:
        line = re.compile(r"#\d+ \S*pystack\.py:%d in %s\n" % (at[site], re.escape(func)))
        summary = re.compile(r"SUMMARY: pinguard: %s \S*pystack\.py:%d in %s\n"
                             % (kind, at[site], re.escape(func)))
        found = [b for b in blocks if (" ERROR: %s " % kind) in b and summary.search(b)]
        need(found, "no %s report whose SUMMARY names pystack.py:%d in %s" % (kind, at[site], func))
        for b in found:
            sec = sections(b)
            acc = [t for h, t in sec.items() if h.startswith(head)]
            gpu = [t for h, t in sec.items() if h.startswith("in-flight GPU access")]
            need(acc and line.search(acc[0]), "the %s stack lacks %s" % (head, func))
            if launch_frames:
                need(gpu and re.search(r"#\d+ \S*pystack\.py:%d in \S*launch_copy\n"
                                       % at["launch"], gpu[0]),
                     "the launch stack lacks pystack.py:%d (python_stacks=auto: on in enforce)"
                     % at["launch"])
            else:
                need(gpu and "pystack.py" not in gpu[0],
                     "a launch stack with Python frames under python_stacks=0")
    return finish(python, fail, p, err, "enforce%s: %d reports name their Python line"
                  % ("" if launch_frames else ", python_stacks=0", len(blocks)))


def check_json(python, helper, env, at, qual, need):
    """log_format=json carries the same Python frames ("python_stack"), and `pinguard report`
    (PG_LAUNCHER, when set) names the launching Python line."""
    import json
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        env = dict(env)
        env["PINGUARD_OPTIONS"] += ":log_format=json:log_path=%s/" % d
        subprocess.run([python, SCRIPT, helper], env=env, capture_output=True, text=True,
                       timeout=120)
        logs = [os.path.join(d, f) for f in os.listdir(d)]
        objs = [json.loads(line) for f in logs for line in open(f) if line.startswith("{")]
        reports = [o for o in objs if o.get("type") == "report"]
        need(len(reports) >= 3, "%d JSON reports, want 3" % len(reports))
        want = {"file": SCRIPT, "line": at["read"], "function": "read_back"}
        need(any(want in (r["access"].get("python_stack") or []) for r in reports),
             "no JSON report's access python_stack has %s" % want)
        launcher = os.environ.get("PG_LAUNCHER")
        if launcher and logs:
            out = subprocess.run([launcher, "report", "--json"] + logs, capture_output=True,
                                 text=True, env={k: v for k, v in os.environ.items()
                                                 if k != "LD_PRELOAD"}).stdout
            try:
                top = json.loads(out)["sites"]
            except (ValueError, KeyError):
                top = []
            need(any("pystack.py:%d in %s" % (at["launch"], qual) in t.get("launched_at", "")
                     for t in top), "pinguard report does not name the launching line: %s" % out)


def finish(python, fail, p, err, what):
    if fail:
        print("FAIL (%s): %s" % (python, "; ".join(fail)))
        print("--- stdout:\n%s\n--- stderr:\n%s" % (p.stdout, err[-8000:]))
        return 1
    print("ok: %s, %s" % (python, what))
    return 0


sys.exit(main())
