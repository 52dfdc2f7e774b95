"""test_pytest_ci.py: the README's CI recipe on a real pytest suite (examples/pytest: a pinned
staging buffer read after a non_blocking download). Run under `pinguard run --simcuda --json
--log DIR`, the buggy suite's JSON reports name the test that was running (test_download), and
`pinguard report --fail-on-reports` fails on its logs; the fixed twin (the same suite without
STAGING_BUG) leaves logs that pass."""
import json
import os
import subprocess
import sys

import pytest

from conftest import HERE

ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SUITE = os.path.join("examples", "pytest")
FAILING = "examples/pytest/test_staging.py::test_download"


def _launcher():
    launcher = os.environ.get("PGT_LAUNCHER")
    if not launcher:
        pytest.fail("PGT_LAUNCHER is not set: run this suite through CTest")
    return launcher


def _suite_under_pinguard(logs, bug):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", SIMCUDA_LATENCY_US="20000")
    env.pop("PYTEST_CURRENT_TEST", None)  # this test's own: the inner pytest sets its own
    env.pop("PINGUARD_OPTIONS", None)
    env.pop("STAGING_BUG", None)
    if bug:
        env["STAGING_BUG"] = "1"
    cmd = [_launcher(), "run", "--simcuda", "--json", "--log", logs, "--",
           sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", SUITE]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def _reports(logs):
    found = []
    for name in os.listdir(logs):
        with open(os.path.join(logs, name)) as f:
            found += [o for o in map(json.loads, f) if o["type"] == "report"]
    return found


def _verdict(logs):
    cmd = [_launcher(), "report", "--fail-on-reports", "--json", "--root", ROOT, logs]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def test_buggy_suite_names_the_test_and_fails_the_build(tmp_path):
    logs = str(tmp_path / "pg")
    run = _suite_under_pinguard(logs, bug=True)
    explain = "suite:\n%s\n%s" % (run.stdout, run.stderr[-4000:])
    reports = _reports(logs)
    assert reports, explain
    assert {r["kind"] for r in reports} == {"cpu-read-during-device-write"}, explain
    assert {r.get("test") for r in reports} == {FAILING}, explain
    assert all("staging.py:" in r["summary"] for r in reports), explain
    verdict = _verdict(logs)
    assert verdict.returncode == 23, verdict.stdout + verdict.stderr
    merged = json.loads(verdict.stdout)
    assert [s["tests"] for s in merged["sites"]] == [[FAILING]], verdict.stdout
    assert merged["sites"][0]["site"].startswith("examples/pytest/staging.py:"), verdict.stdout


def test_fixed_twin_passes(tmp_path):
    logs = str(tmp_path / "pg")
    run = _suite_under_pinguard(logs, bug=False)
    assert run.returncode == 0, "suite:\n%s\n%s" % (run.stdout, run.stderr[-4000:])
    assert _reports(logs) == []
    verdict = _verdict(logs)
    assert verdict.returncode == 0, verdict.stdout + verdict.stderr
    assert json.loads(verdict.stdout)["reports"] == 0
