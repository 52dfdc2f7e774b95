"""env.py: what every command needs to start a process under pinguard: finding libpinguard.so,
building LD_PRELOAD, and parsing and merging PINGUARD_OPTIONS the way policy/pg_options.c does."""
import os

LIB_NAME = "libpinguard.so"
# simcuda, the simulated CUDA runtime and driver (tests/simcuda), in the build tree's simcuda/.
SIMCUDA_RUNTIME = "libcudart.so.13"
SIMCUDA_DRIVER = "libcuda.so.1"

# Sanitizer runtimes must come first in LD_PRELOAD (the loader refuses them anywhere else), so
# they keep their place ahead of libpinguard.so.
_SANITIZER_RUNTIMES = ("libasan", "libtsan", "libubsan", "libhwasan", "liblsan", "libmsan",
                       "libclang_rt.")

# Separators of PINGUARD_OPTIONS pairs (policy/README.md, "Parsing").
_SEPARATORS = ":, \t\n\r\v\f"


class UsageError(Exception):
    """A problem the user must fix (bad arguments, missing library): exit status 2."""


def find_library(script_dir):
    """The libpinguard.so to preload, as an absolute path.

    $PINGUARD_LIB (a file, or a directory holding it) wins, and is never silently ignored. Then
    the installed and build layouts, where the launcher sits in bin/ beside lib/, then a source
    checkout's tools/pinguard with the default build directory beside it."""
    explicit = os.environ.get("PINGUARD_LIB")
    if explicit:
        path = os.path.join(explicit, LIB_NAME) if os.path.isdir(explicit) else explicit
        if not os.path.isfile(path):
            raise UsageError("PINGUARD_LIB=%s: no such file" % path)
        return os.path.abspath(path)
    for rel in ("../lib", "../build/lib"):
        path = os.path.normpath(os.path.join(script_dir, rel, LIB_NAME))
        if os.path.isfile(path):
            return path
    raise UsageError("cannot find %s next to the launcher (../lib) or in ../build/lib; "
                     "set PINGUARD_LIB to its path" % LIB_NAME)


def find_simcuda(script_dir):
    """The directory holding simcuda's libcudart.so.13 and libcuda.so.1, as an absolute path.

    $PINGUARD_SIMCUDA (that directory) wins and is never silently ignored; then simcuda/ in the
    build layout, beside lib/ (the launcher is bin/pinguard), then a source checkout's default
    build directory."""
    explicit = os.environ.get("PINGUARD_SIMCUDA")
    candidates = [explicit] if explicit else [os.path.join(script_dir, rel)
                                              for rel in ("../simcuda", "../build/simcuda")]
    for d in candidates:
        if all(os.path.isfile(os.path.join(d, f)) for f in (SIMCUDA_RUNTIME, SIMCUDA_DRIVER)):
            return os.path.abspath(d)
    if explicit:
        raise UsageError("PINGUARD_SIMCUDA=%s: no %s and %s there"
                         % (explicit, SIMCUDA_RUNTIME, SIMCUDA_DRIVER))
    raise UsageError("--simcuda: cannot find simcuda (%s, %s) in ../simcuda or ../build/simcuda "
                     "next to the launcher; build it, or set PINGUARD_SIMCUDA to its directory"
                     % (SIMCUDA_RUNTIME, SIMCUDA_DRIVER))


def _is_sanitizer_runtime(entry):
    return os.path.basename(entry).startswith(_SANITIZER_RUNTIMES)


def preload_list(lib, existing, after=()):
    """LD_PRELOAD with `lib` in front of the existing entries (sanitizer runtimes stay first),
    and the entries of `after` right behind it.

    The loader accepts both ':' and ' ' between entries; the result uses ':'. An existing
    libpinguard.so entry (this one, or another build's) is dropped: two shims in one process
    would each track and wrap the other."""
    entries = [e for e in existing.replace(" ", ":").split(":") if e] if existing else []
    entries = [e for e in entries if os.path.basename(e) != LIB_NAME and e not in after]
    runtimes = [e for e in entries if _is_sanitizer_runtime(e)]
    others = [e for e in entries if not _is_sanitizer_runtime(e)]
    return ":".join(runtimes + [lib] + list(after) + others)


def parse_options(text):
    """Splits a PINGUARD_OPTIONS string into (key, value) pairs, in order.

    Mirrors the shim's parser: pairs are separated by ':' ',' or white space, a value runs to the
    next separator (so it may contain '='), and a value quoted with ' or " may contain
    separators. A pair without '=' comes back with value None, so the shim can still warn about
    it. The shim applies later pairs over earlier ones, and so does merge_options."""
    pairs = []
    i, n = 0, len(text)
    while i < n:
        if text[i] in _SEPARATORS:
            i += 1
            continue
        start = i
        while i < n and text[i] not in _SEPARATORS and text[i] != "=":
            i += 1
        key = text[start:i]
        if i >= n or text[i] != "=":
            pairs.append((key, None))
            continue
        i += 1
        if i < n and text[i] in "'\"":
            quote = text[i]
            end = text.find(quote, i + 1)
            if end < 0:  # unterminated: keep it verbatim for the shim to warn about
                pairs.append((key, text[i:]))
                break
            pairs.append((key, text[i + 1:end]))
            i = end + 1
        else:
            start = i
            while i < n and text[i] not in _SEPARATORS:
                i += 1
            pairs.append((key, text[start:i]))
    return pairs


def _quote(value):
    if value == "" or any(c in _SEPARATORS or c in "'\"" for c in value):
        return ("'%s'" if '"' in value else '"%s"') % value
    return value


def format_options(pairs):
    """The inverse of parse_options: 'k=v:k=v', quoting values that need it."""
    return ":".join(k if v is None else "%s=%s" % (k, _quote(v)) for k, v in pairs)


def merge_options(*layers):
    """Merges option strings or pair lists, later layers winning key by key.

    Keys keep the position of their first appearance, so the result reads like the user's own
    string with the launcher's flags applied on top."""
    merged = {}
    for layer in layers:
        pairs = parse_options(layer) if isinstance(layer, str) else layer
        for key, value in pairs:
            merged[key] = value
    return format_options(list(merged.items()))


def child_environment(lib, options, base=None, simcuda_dir=None):
    """A copy of `base` (default: os.environ) with libpinguard.so preloaded and `options` as
    PINGUARD_OPTIONS.

    With simcuda_dir, the command runs on simcuda: its libcudart.so.13 is preloaded right after
    libpinguard.so, and the directory goes first on LD_LIBRARY_PATH. Preloading is what makes it
    the process's runtime even for libraries whose DT_RPATH names their own copy (PyTorch's wheel
    does): the loader reuses an object already loaded under the same SONAME. It must come after
    libpinguard.so, or its definitions would be found before pinguard's wrappers. The driver,
    libcuda.so.1, is found through LD_LIBRARY_PATH when a library needs it."""
    env = dict(os.environ if base is None else base)
    after = ()
    if simcuda_dir:
        after = (os.path.join(simcuda_dir, SIMCUDA_RUNTIME),)
        paths = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p and p != simcuda_dir]
        env["LD_LIBRARY_PATH"] = ":".join([simcuda_dir] + paths)
    env["LD_PRELOAD"] = preload_list(lib, env.get("LD_PRELOAD", ""), after)
    env["PINGUARD_OPTIONS"] = options
    return env
