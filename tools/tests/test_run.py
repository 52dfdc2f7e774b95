"""Intent: `pinguard run` preloads the shim, passes the options, and exits with the command's
status: a buggy program reports and exits with pinguard's exitcode in audit (its own status in
enforce, unless enforce_fails=1), its fixed twin is silent and exits 0, and bad usage exits 2
(an unknown mode or option, or a bad option value, before the program starts)."""
import glob
import json
import os
import tempfile

from common import (PYTHON, RUNTIME, SIMCUDA_DIR, base_env, check, e2e, main, pinguard,
                    reports_of)

FREE = "free-during-device-access"


def audit():
    r = pinguard("run", "--mode", "audit", "--", e2e("free_during_copy"), "bug")
    check(r.rc == 23, "the bug exits with pinguard's exitcode 23", r)
    check(reports_of(r.err, FREE) == 1 and "audit: no wait" in r.err, "one audit report", r)


def fixed():
    r = pinguard("run", "--", e2e("free_during_copy"), "fixed")
    check(r.rc == 0 and reports_of(r.err) == 0, "the fixed twin is silent and exits 0", r)


def enforce():
    r = pinguard("run", "--mode", "enforce", "--", e2e("free_during_copy"), "bug", "5")
    check(reports_of(r.err, FREE) == 1, "enforce reports too", r)
    check("enforce: waited" in r.err, "enforce waited for the copy", r)
    check(r.rc == 5, "enforce prevented the bug: the program's own status 5 stands", r)
    r = pinguard("run", "--mode", "enforce", "--options", "enforce_fails=1", "--",
                 e2e("free_during_copy"), "bug", "5")
    check(r.rc == 23 and reports_of(r.err, FREE) == 1, "enforce_fails=1 exits with exitcode", r)


def exitcode_option():
    r = pinguard("run", "--options", "exitcode=0", "--", e2e("free_during_copy"), "bug")
    check(r.rc == 0 and reports_of(r.err, FREE) == 1, "exitcode=0 keeps the program's status", r)
    r = pinguard("run", "--options", "exitcode=7", "--", e2e("free_during_copy"), "bug")
    check(r.rc == 7, "exitcode=7 shapes the status", r)


def json_log():
    with tempfile.TemporaryDirectory() as tmp:
        logdir = os.path.join(tmp, "logs")  # created by the launcher
        r = pinguard("run", "--json", "--log", logdir, "--", e2e("free_during_copy"), "bug")
        check(r.rc == 23 and reports_of(r.err) == 0, "the report goes to the log, not stderr", r)
        files = glob.glob(os.path.join(logdir, "pinguard.*"))
        check(len(files) == 1, "one log file pinguard.<pid>, got %s" % files, r)
        with open(files[0]) as f:
            lines = [json.loads(line) for line in f]
        kinds = [o.get("kind") for o in lines if o["type"] == "report"]
        check(kinds == [FREE], "the log holds the JSON report, got %s" % kinds, r)
        check(any(o["type"] == "summary" for o in lines), "and the exit summary", r)


def own_frames():
    """pinguard's own frames (its wrappers of cudaHostAlloc, cudaMemcpyAsync, cudaFreeHost) never
    appear in a stack: each stack starts at the program's call, in text and in JSON."""
    r = pinguard("run", "--", e2e("free_during_copy"), "bug")
    check(reports_of(r.err, FREE) == 1, "one report", r)
    check("libpinguard" not in r.err and "pg_cuda_" not in r.err, "no pinguard frame", r)
    check(r.err.count("    #0 ") == 3 and "in main" in r.err.split("    #0 ")[1],
          "each of the three stacks starts in main", r)
    with tempfile.TemporaryDirectory() as tmp:
        r = pinguard("run", "--json", "--log", tmp, "--", e2e("free_during_copy"), "bug")
        with open(glob.glob(os.path.join(tmp, "pinguard.*"))[0]) as f:
            report = [json.loads(line) for line in f if '"report"' in line][0]
        stacks = [report["access"]["stack"], report["region"]["stack"]] + \
            [g["stack"] for g in report["gpu"]]
        modules = [fr["module"] for st in stacks for fr in st]
        check(modules and not any("libpinguard" in m for m in modules),
              "no JSON frame in libpinguard.so: %s" % modules, r)


SHOW_ENV = "import os; print(os.environ['LD_PRELOAD']); print(os.environ['PINGUARD_OPTIONS'])"


def environment():
    env = base_env(PINGUARD_OPTIONS="mode=audit:max_reports=7:verbosity=0")
    env["LD_PRELOAD"] = ((RUNTIME + ":") if RUNTIME else "") + "libm.so.6 /old/libpinguard.so"
    with tempfile.TemporaryDirectory() as tmp:
        r = pinguard("run", "--mode", "enforce", "--json", "--log", tmp, "--guard",
                     "--options", "max_reports=5:suppressions='a b.txt'", "--",
                     PYTHON, "-c", SHOW_ENV, env=env)
        check(r.rc == 0, "the command ran", r)
        preload, options = r.out.splitlines()[:2]
        entries = preload.split(":")
        want = ([RUNTIME] if RUNTIME else []) + ["libpinguard.so", "libm.so.6"]
        check([os.path.basename(e) if "pinguard" in e else e for e in entries] == want,
              "libpinguard.so is inserted before the existing entries (after a sanitizer "
              "runtime), replacing another build's: %s" % entries, r)
        want = ("mode=enforce:max_reports=5:verbosity=0:suppressions=\"a b.txt\":guard=1:"
                "log_path=%s/pinguard:log_format=json" % os.path.abspath(tmp))
        check(options == want, "options merged, flags winning:\n  got  %s\n  want %s"
              % (options, want), r)
        r = pinguard("run", "--no-guard", "--", PYTHON, "-c", SHOW_ENV, env=env)
        check(r.out.splitlines()[1].endswith(":guard=0"), "--no-guard sets guard=0", r)
        r = pinguard("run", "--guard", "--no-guard", "--", "true")
        check(r.rc == 2, "--guard and --no-guard exclude each other", r)


SHOW_SIM_ENV = ("import os; print(os.environ['LD_PRELOAD']); print(os.environ['LD_LIBRARY_PATH']);"
                " print(os.environ['PINGUARD_OPTIONS'])")


def simcuda():
    env = base_env(LD_LIBRARY_PATH="/opt/x:" + SIMCUDA_DIR)
    env["LD_PRELOAD"] = ((RUNTIME + ":") if RUNTIME else "") + "libm.so.6"
    r = pinguard("run", "--simcuda", "--", PYTHON, "-c", SHOW_SIM_ENV, env=env)
    check(r.rc == 0, "the command ran", r)
    preload, libpath, options = r.out.splitlines()[:3]
    entries = preload.split(":")
    want = ([RUNTIME] if RUNTIME else []) + ["libpinguard.so",
                                             os.path.join(SIMCUDA_DIR, "libcudart.so.13"),
                                             "libm.so.6"]
    check([os.path.basename(e) if e.endswith("libpinguard.so") else e for e in entries] == want,
          "simcuda's runtime is preloaded right after libpinguard.so: %s" % entries, r)
    check(libpath.split(":") == [SIMCUDA_DIR, "/opt/x"],
          "simcuda's directory (libcuda.so.1) goes first on LD_LIBRARY_PATH, once: %s" % libpath,
          r)
    check(options == "fast_unwind=0", "full stacks by default on simcuda: %s" % options, r)
    r = pinguard("run", "--simcuda", "--options", "fast_unwind=1", "--", PYTHON, "-c",
                 SHOW_SIM_ENV, env=env)
    check(r.out.splitlines()[2] == "fast_unwind=1", "the user's fast_unwind wins", r)
    # A CUDA program under the launcher's simcuda mode: the copy it frees too early is reported.
    r = pinguard("run", "--simcuda", "--", e2e("free_during_copy"), "bug", env=env)
    check(r.rc == 23 and reports_of(r.err, FREE) == 1, "reported on simcuda", r)
    r = pinguard("run", "--simcuda", "--", "true",
                 env=base_env(PINGUARD_SIMCUDA="/nonexistent/simcuda"))
    check(r.rc == 2 and "PINGUARD_SIMCUDA" in r.err, "a bad PINGUARD_SIMCUDA is an error", r)


def usage():
    for args in ([], ["frobnicate"], ["run"], ["run", "--mode", "loud", "--", "true"],
                 ["report"], ["selftest", "--bogus"]):
        r = pinguard(*args)
        check(r.rc == 2 and r.err, "bad usage %s exits 2 with a message" % args, r)
    for args in (["--help"], ["run", "--help"], ["report", "--help"], ["selftest", "--help"]):
        r = pinguard(*args)
        check(r.rc == 0 and "usage:" in r.out, "%s prints usage and exits 0" % args, r)
    # A mode or option the shim would ignore with a warning is refused before the program runs.
    with tempfile.TemporaryDirectory() as tmp:
        marker = os.path.join(tmp, "ran")
        touch = [PYTHON, "-c", "open(%r, 'w').close()" % marker]
        for opts, env_opts, word in (
                (["--options", "mode=enforc"], "", "'mode' = 'enforc' (expected off, audit or "
                                                   "enforce)"),
                (["--options", "guard=maybe"], "", "'guard' = 'maybe'"),
                (["--options", "stack_depth=0:print_stats=1"], "", "'stack_depth' = '0'"),
                (["--options", "no_such_option=1"], "", "unknown option 'no_such_option'"),
                (["--options", "max_reports"], "", "option without a value 'max_reports'"),
                ([], "mode=enfroce", "PINGUARD_OPTIONS: bad value for option 'mode'")):
            r = pinguard("run", *opts, "--", *touch, env=base_env(PINGUARD_OPTIONS=env_opts))
            check(r.rc == 2 and word in r.err, "%s %r exits 2 naming the problem" % (opts, env_opts),
                  r)
            check(not os.path.exists(marker), "the program was not started", r)
        r = pinguard("run", "--options", "mode=Enforce:guard_min_bytes=64k:stack_depth=16:"
                     "python_stacks=auto:log_format=json:exitcode=255", "--", *touch)
        check(r.rc == 0 and os.path.exists(marker), "good values run the program", r)
    r = pinguard("run", "--", "/nonexistent/program")
    check(r.rc == 127 and "not found" in r.err, "a missing command exits 127", r)
    r = pinguard("run", "--", "true", env=base_env(PINGUARD_LIB="/nonexistent/libpinguard.so"))
    check(r.rc == 2 and "PINGUARD_LIB" in r.err, "a bad PINGUARD_LIB is an error, not ignored", r)


main({"audit": audit, "fixed": fixed, "own_frames": own_frames, "enforce": enforce, "exitcode": exitcode_option,
      "json_log": json_log, "environment": environment, "simcuda": simcuda, "usage": usage})
