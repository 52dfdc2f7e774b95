"""selftest.py: `pinguard selftest`: checks, in the current environment, each link of the chain
pinguard relies on: the library loads, its wrappers sit in front of the real CUDA runtime, it
tracks an in-flight copy, and guard pages work. Each check runs in a child process (probes.py)
started the way `pinguard run` starts programs, and prints one PASS, FAIL or SKIP line."""
import json
import os
import subprocess
import sys

from . import env as pgenv

PROBES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probes.py")
SYMBOL_NOT_FOUND = 302  # cudaErrorSharedObjectSymbolNotFound: the shim found no real function
# A copy stays in flight long enough to be seen from Python: several 16 MiB copies keep a real
# device busy for milliseconds, and the simulated runtime is told to take its time.
SIZE, COPIES = 16 << 20, 4
PROBE_ENV = {"SIMCUDA_LATENCY_US": "200000"}
TIMEOUT_S = 60


def add_arguments(parser):
    parser.add_argument("--cudart", metavar="PATH",
                        help="the libcudart to load (default: libcudart.so.13, then .so.12, "
                             "as the dynamic loader finds them)")
    parser.add_argument("--simcuda", action="store_true",
                        help="run the checks on simcuda, the simulated CUDA runtime and driver, "
                             "found as `pinguard run --simcuda` finds them (no GPU needed)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="show each check's child output")


class Target:
    """What the probes run under: the library, and simcuda's directory (None: the real CUDA)."""

    def __init__(self, lib, simcuda_dir=None):
        self.lib, self.simcuda_dir = lib, simcuda_dir


class Checks:
    def __init__(self, verbose):
        self.verbose = verbose
        self.failed = 0
        self.count = 0

    def line(self, verdict, name, text, child=None):
        self.count += 1
        if verdict == "FAIL":
            self.failed += 1
        print("%-4s  %s: %s" % (verdict, name, text))
        if child is not None and (self.verbose or verdict == "FAIL"):
            for out in (child.stdout, child.stderr):
                for row in out.splitlines()[-20:]:
                    print("      | " + row)
        sys.stdout.flush()


class Child:
    """One probe's outcome: exit status, output, and its PGRESULT object (None if it died)."""

    def __init__(self, rc, stdout, stderr):
        self.rc, self.stdout, self.stderr = rc, stdout, stderr
        self.result = None
        for row in stdout.splitlines():
            if row.startswith("PGRESULT "):
                self.result = json.loads(row[len("PGRESULT "):])

    def reported(self, kind):
        return ("pinguard: ERROR: %s " % kind) in self.stderr


def _text(output):
    """TimeoutExpired carries bytes or str (or None), whatever run() was asked for."""
    if isinstance(output, bytes):
        return output.decode("utf-8", "replace")
    return output or ""


def run_probe(target, options, *probe_args):
    env = pgenv.child_environment(target.lib, options, simcuda_dir=target.simcuda_dir)
    env.update(PROBE_ENV)
    try:
        p = subprocess.run([sys.executable, PROBES] + [str(a) for a in probe_args], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, errors="replace", timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        return Child(None, _text(e.stdout), _text(e.stderr) + "\n(timed out)")
    return Child(p.returncode, p.stdout, p.stderr)


def _died(child):
    if child.rc is None:
        return "timed out after %d s" % TIMEOUT_S
    if child.rc < 0:
        return "the child died of signal %d" % -child.rc
    return "the child exited with status %d and no result" % child.rc


def check_load(checks, target):
    child = run_probe(target, "mode=audit:log_path=stderr", "load")
    r = child.result
    if not r or child.rc != 0:
        checks.line("FAIL", "load", _died(child), child)
        return False
    if not r["present"]:
        checks.line("FAIL", "load", "the preloaded process has no pinguard_wait: %s was not "
                                    "loaded" % target.lib, child)
        return False
    if "pinguard:" in child.stderr:
        checks.line("FAIL", "load", "a process without CUDA got pinguard output", child)
        return False
    checks.line("PASS", "load", "%s loads; a process without CUDA is unchanged" % r["module"],
                child)
    return True


def check_cuda(checks, target, cudart):
    """Interposition and tracking. Returns True when a device answered (tracking was possible)."""
    options = "mode=audit:exitcode=0:log_path=stderr"
    child = run_probe(target, options, "cuda", cudart or "", SIZE, COPIES, "commit")
    r = child.result
    if not r:
        checks.line("FAIL", "interposition", _died(child), child)
        return False
    if not r.get("cudart"):
        checks.line("FAIL", "interposition",
                    "no CUDA runtime found (%s); put its directory on LD_LIBRARY_PATH or pass "
                    "--cudart" % "; ".join(r.get("errors", [])), child)
        return False
    where = "%s (runtime %d)" % (r["cudart"], r["version"])
    if not r["wrapper"] or os.path.realpath(r["wrapper"]) != os.path.realpath(target.lib):
        checks.line("FAIL", "interposition", "cudaHostAlloc resolves to %s, not to pinguard's "
                                             "wrapper" % r["wrapper"], child)
        return False
    if r["hostalloc"] == SYMBOL_NOT_FOUND or "cannot find the real" in child.stderr:
        checks.line("FAIL", "interposition", "pinguard's wrapper did not find the real "
                                             "cudaHostAlloc in %s" % where, child)
        return False
    if r["hostalloc"]:
        checks.line("PASS", "interposition",
                    "no GPU: CUDA calls fail (%s); interposition resolved: cudaHostAlloc -> "
                    "pinguard -> %s" % (r["hostalloc_name"], where), child)
        checks.line("SKIP", "tracking", "needs a working CUDA device")
        return False
    checks.line("PASS", "interposition", "cudaHostAlloc -> pinguard -> %s" % where, child)
    if r.get("failed"):
        checks.line("FAIL", "tracking", "%s failed: %s" % (r["failed"], r["error"]), child)
    elif r.get("found", 0) >= 1 and child.reported("commit-during-device-write"):
        checks.line("PASS", "tracking", "a device->host copy in flight was found by "
                                        "pinguard_commit and reported", child)
    else:
        checks.line("FAIL", "tracking", "pinguard_commit found %s in-flight copies of the "
                                        "buffer, expected at least 1 and a report"
                    % r.get("found"), child)
    return True


def check_fault(checks, target):
    child = run_probe(target, "mode=audit:log_path=stderr", "fault")
    r = child.result
    if not r or child.rc != 0:
        checks.line("FAIL", "guard pages", _died(child), child)
    elif "mprotect_errno" in r:
        checks.line("FAIL", "guard pages", "mprotect(PROT_NONE) failed with errno %d"
                    % r["mprotect_errno"], child)
    elif r["faults"] == 1 and r["value"] == 0x3C:
        checks.line("PASS", "guard pages", "a protected page faulted, the handler (chained "
                                           "behind pinguard's) unprotected it, and the access "
                                           "was retried", child)
    else:
        checks.line("FAIL", "guard pages", "%d faults, value 0x%02x; expected 1 fault and 0x3c"
                    % (r["faults"], r["value"]), child)


def check_guard_tracking(checks, target, cudart):
    options = "mode=enforce:guard=1:guard_min_bytes=4096:exitcode=0:log_path=stderr"
    child = run_probe(target, options, "cuda", cudart or "", SIZE, COPIES, "guard")
    r = child.result
    if not r or child.rc != 0:
        checks.line("FAIL", "guarded buffer", _died(child), child)
    elif r.get("failed"):
        checks.line("FAIL", "guarded buffer", "%s failed: %s" % (r["failed"], r["error"]), child)
    elif child.reported("cpu-read-during-device-write") and r.get("byte") == 0x5A:
        checks.line("PASS", "guarded buffer", "a CPU read of an in-flight pinned buffer faulted, "
                                              "waited for the copy, and read the copied bytes",
                    child)
    else:
        checks.line("FAIL", "guarded buffer", "no cpu-read-during-device-write report, or the "
                                              "read saw 0x%02x instead of 0x5a"
                    % (r.get("byte") or 0), child)


def main(args, script_dir):
    checks = Checks(args.verbose)
    print("pinguard selftest (python %s)" % sys.executable)
    try:
        lib = pgenv.find_library(script_dir)
    except pgenv.UsageError as e:
        checks.line("FAIL", "library", str(e))
        print("selftest: FAIL (1 of 1 checks failed)")
        return 1
    checks.line("PASS", "library", lib)
    target = Target(lib)
    if args.simcuda:
        try:
            target.simcuda_dir = pgenv.find_simcuda(script_dir)
        except pgenv.UsageError as e:
            checks.line("FAIL", "simcuda", str(e))
            print("selftest: FAIL (%d of %d checks failed)" % (checks.failed, checks.count))
            return 1
        checks.line("PASS", "simcuda", target.simcuda_dir)
    if check_load(checks, target):
        device = check_cuda(checks, target, args.cudart)
        check_fault(checks, target)
        if device:
            check_guard_tracking(checks, target, args.cudart)
        else:
            checks.line("SKIP", "guarded buffer", "needs a working CUDA device")
    verdict = "FAIL (%d of %d checks failed)" % (checks.failed, checks.count) if checks.failed \
        else "PASS"
    print("selftest: %s" % verdict)
    return 1 if checks.failed else 0
