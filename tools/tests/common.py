"""common.py: what the tools tests share: the paths CTest passes in, starting the launcher, and a
failure helper that shows the outputs involved."""
import os
import subprocess
import sys

PYTHON = os.environ["PGT_PYTHON"]  # Debian's python3: a pyenv shim may come first on PATH
LAUNCHER = os.environ["PGT_LAUNCHER"]
SIMCUDA_DIR = os.environ["PGT_SIMCUDA_DIR"]
E2E_DIR = os.environ.get("PGT_E2E_DIR", "")
# A sanitizer build's runtime, which must come first in LD_PRELOAD ("" otherwise).
RUNTIME = os.environ.get("PGT_PRELOAD_RUNTIME", "")
TIMEOUT_S = 60


def e2e(name):
    return os.path.join(E2E_DIR, "e2e_" + name)


def base_env(**extra):
    env = dict(os.environ)
    for key in ("LD_PRELOAD", "PINGUARD_OPTIONS", "PINGUARD_LIB"):
        env.pop(key, None)
    if RUNTIME:
        env["LD_PRELOAD"] = RUNTIME
    env["ASAN_OPTIONS"] = "detect_leaks=0"  # the interpreters, not our code, would be reported
    # A 100 ms simulated device latency keeps every "bug" run's race open on a loaded machine.
    env["SIMCUDA_LATENCY_US"] = "100000"
    env.update(extra)
    return env


class Result:
    def __init__(self, argv, p):
        self.argv, self.rc, self.out, self.err = argv, p.returncode, p.stdout, p.stderr

    def show(self):
        return "--- command: %s\n--- exit: %s\n--- stdout:\n%s--- stderr:\n%s" % (
            " ".join(self.argv), self.rc, self.out, self.err)


def run(argv, env=None, stdin=None):
    p = subprocess.run(argv, env=env if env is not None else base_env(), input=stdin,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       errors="replace", timeout=TIMEOUT_S)
    return Result(argv, p)


def pinguard(*args, env=None, stdin=None):
    """Runs `pinguard ARGS` from the build tree, with Debian's python3."""
    return run([PYTHON, LAUNCHER] + list(args), env=env, stdin=stdin)


def check(condition, message, *results):
    if not condition:
        print("FAIL: " + message)
        for r in results:
            print(r.show())
        sys.exit(1)


def reports_of(text, kind=None):
    """How many text reports (of `kind`, or of any kind) a stream holds."""
    needle = "pinguard: ERROR: " + (kind + " " if kind else "")
    return text.count(needle)


def main(cases):
    """Runs the case named by argv[1]; each case calls check() and returns normally on success."""
    if len(sys.argv) != 2 or sys.argv[1] not in cases:
        sys.exit("usage: %s %s" % (sys.argv[0], "|".join(sorted(cases))))
    cases[sys.argv[1]]()
    print("ok: " + sys.argv[1])
