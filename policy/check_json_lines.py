# check_json_lines.py: reads pinguard JSON log lines on stdin and checks that each is one valid
# JSON object with the fields a consumer relies on. Used by the unit.policy.json_valid test.
import json
import sys

TYPES = {"report", "summary", "repeat", "suppression", "stats", "limit"}
n = 0
reports = 0
for line in sys.stdin:
    o = json.loads(line)
    n += 1
    assert isinstance(o, dict) and o.get("type") in TYPES, o
    assert isinstance(o["pid"], int), o
    if o["type"] == "report":
        reports += 1
        for key in ("id", "kind", "addr", "len", "region", "access", "gpu", "gpu_total",
                    "action", "waited_ms", "summary"):
            assert key in o, (key, o)
        assert o["summary"].startswith("SUMMARY: pinguard: " + o["kind"]), o
        assert len(o["summary"]) <= 1024, len(o["summary"])
        assert isinstance(o["access"]["stack"], list), o
        for g in o["gpu"]:
            assert isinstance(g["device"], int) and g["device"] >= 0, g
        for frame in o["access"]["stack"]:
            assert set(frame) == {"pc", "module", "offset", "function", "file", "line"}, frame
assert reports >= 10, reports
print("ok", n, "lines", reports, "reports")
