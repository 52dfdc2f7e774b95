"""pinguard_tool: the launcher's commands (run, report, selftest) behind the `pinguard` script.

The package is stdlib-only so the launcher works in any Python 3 on a serving host, including
inside a minimal container image, without installing anything.
"""
