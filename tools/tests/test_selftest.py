"""Intent: `pinguard selftest` passes every check on the simulated runtime (load, interposition,
tracking, guard pages, a guarded in-flight buffer), also when asked with --simcuda and no
LD_LIBRARY_PATH; with the toolkit's real libcudart and no GPU
it still proves interposition ("no GPU: CUDA calls fail"); and without the library it fails
with exit status 1."""
import os

from common import SIMCUDA_DIR, base_env, check, main, pinguard

CHECKS = ("library", "load", "interposition", "tracking", "guard pages", "guarded buffer")


def verdicts(out):
    found = {}
    for line in out.splitlines():
        verdict, _, rest = line.partition("  ")
        if verdict.strip() in ("PASS", "FAIL", "SKIP"):
            found[rest.split(":")[0]] = verdict.strip()
    return found


def simcuda():
    r = pinguard("selftest", env=base_env(LD_LIBRARY_PATH=SIMCUDA_DIR))
    v = verdicts(r.out)
    check(r.rc == 0 and "selftest: PASS" in r.out, "selftest passes on simcuda", r)
    check(v == {c: "PASS" for c in CHECKS}, "every check ran and passed: %s" % v, r)
    check("simcuda/libcudart.so.13" in r.out, "the simulated runtime was the one found", r)


def simcuda_flag():
    """`selftest --simcuda` finds simcuda as `run --simcuda` does: no LD_LIBRARY_PATH needed."""
    env = base_env()
    env.pop("LD_LIBRARY_PATH", None)
    r = pinguard("selftest", "--simcuda", env=env)
    v = verdicts(r.out)
    check(r.rc == 0 and "selftest: PASS" in r.out, "selftest --simcuda passes", r)
    check(v == dict({c: "PASS" for c in CHECKS}, simcuda="PASS"),
          "every check ran on simcuda and passed: %s" % v, r)
    check(os.path.join(SIMCUDA_DIR, "libcudart.so.13") in r.out,
          "the simulated runtime was the one found", r)
    r = pinguard("selftest", "--simcuda", env=base_env(PINGUARD_SIMCUDA="/nonexistent"))
    check(r.rc == 1 and verdicts(r.out).get("simcuda") == "FAIL",
          "selftest --simcuda without simcuda fails", r)


def real_cudart():
    r = pinguard("selftest", env=base_env(LD_LIBRARY_PATH=os.environ["PGT_CUDART_DIR"]))
    v = verdicts(r.out)
    check(r.rc == 0 and v["interposition"] == "PASS", "interposition resolved", r)
    if "no GPU: CUDA calls fail" in r.out:  # the machines this suite normally runs on
        check(v["tracking"] == "SKIP" and v["guarded buffer"] == "SKIP", "device checks skip", r)
    else:
        check(v["tracking"] == "PASS", "with a GPU, tracking passes", r)


def missing_library():
    r = pinguard("selftest", env=base_env(PINGUARD_LIB="/nonexistent/libpinguard.so",
                                          LD_LIBRARY_PATH=SIMCUDA_DIR))
    check(r.rc == 1 and verdicts(r.out).get("library") == "FAIL" and "selftest: FAIL" in r.out,
          "a missing library fails the selftest", r)


main({"simcuda": simcuda, "simcuda_flag": simcuda_flag, "real_cudart": real_cudart, "missing_library": missing_library})
