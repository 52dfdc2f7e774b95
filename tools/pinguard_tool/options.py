"""options.py: checks PINGUARD_OPTIONS pairs the way the shim's parser (policy/pg_options.c) does,
so that `pinguard run` refuses a typo before it starts the program instead of letting the shim
warn and run with the default. The option names and types come from policy/pg_options.inc, the
shim's own table: the build copies it beside this module; a source checkout reads it in place."""
import os
import re

_HERE = os.path.dirname(os.path.abspath(__file__))
_TABLE_PLACES = (os.path.join(_HERE, "pg_options.inc"),
                 os.path.join(_HERE, "..", "..", "policy", "pg_options.inc"))
_OPT = re.compile(r'^OPT\(\s*(\w+)\s*,\s*(\w+)\s*,')
_BOOLS = {"1": True, "true": True, "yes": True, "on": True,
          "0": False, "false": False, "no": False, "off": False}
STR_MAX = 1023


def _dec(text, lo, hi):
    return text.isdigit() and text.isascii() and lo <= int(text) <= hi


def _size(text):
    shift = {"k": 10, "m": 20, "g": 30}.get(text[-1:].lower(), 0)
    digits = text[:-1] if shift else text
    return _dec(digits, 0, (1 << 62) >> shift)


# type -> (accepts(value), what the shim expects): the same ranges as pg_options.c's set_*.
_TYPES = {
    "bool": (lambda v: v.lower() in _BOOLS, "1/0, true/false, yes/no or on/off"),
    "tristate": (lambda v: v.lower() == "auto" or v.lower() in _BOOLS,
                 "auto, 1/0, true/false, yes/no or on/off"),
    "uint": (lambda v: _dec(v, 0, 2147483647), "a decimal number from 0 to 2147483647"),
    "u8": (lambda v: _dec(v, 0, 255), "an exit status from 0 to 255"),
    "depth": (lambda v: _dec(v, 1, 16), "a frame count from 1 to 16"),
    "size": (_size, "a byte count up to 2^62, optionally with a k, m or g suffix"),
    "mode": (lambda v: v.lower() in ("off", "audit", "enforce"), "off, audit or enforce"),
    "format": (lambda v: v.lower() in ("text", "json"), "text or json"),
    "str": (lambda v: len(v.encode("utf-8", "surrogateescape")) <= STR_MAX,
            "a string of at most 1023 bytes"),
}


def table():
    """{name: type} of every option the shim knows, or None when the table cannot be found."""
    for path in _TABLE_PLACES:
        try:
            with open(path) as f:
                return {m.group(2): m.group(1) for m in map(_OPT.match, f) if m}
        except OSError:
            continue
    return None


def problems(pairs, source, known=None):
    """The messages for the (key, value) pairs the shim would warn about and ignore: an unknown
    option, a pair without a value, a value out of its type's range. Empty when all is well."""
    known = table() if known is None else known
    out = []
    if known is None:
        return ["cannot check %s: the shim's option table (pg_options.inc) is not beside the "
                "launcher's modules" % source]
    for key, value in pairs:
        if value is None:
            out.append("%s: option without a value '%s' (expected key=value)" % (source, key))
        elif key not in known:
            out.append("%s: unknown option '%s'" % (source, key))
        elif known[key] in _TYPES and not _TYPES[known[key]][0](value):
            out.append("%s: bad value for option '%s' = '%s' (expected %s)"
                       % (source, key, value, _TYPES[known[key]][1]))
    return out
