"""run.py: `pinguard run`: starts a command with libpinguard.so preloaded and PINGUARD_OPTIONS
set, like `compute-sanitizer app args`. The launcher replaces itself with the command (exec), so
the exit status, signals and process tree are exactly the command's."""
import os
import sys

from . import env as pgenv
from . import options as pgoptions

_MODES = ("audit", "enforce", "off")


def add_arguments(parser):
    parser.add_argument("--mode", choices=_MODES,
                        help="audit reports violations (the default), enforce also waits for "
                             "exactly the conflicting GPU work, off tracks nothing")
    guard = parser.add_mutually_exclusive_group()
    guard.add_argument("--guard", dest="guard", action="store_const", const="1",
                       help="protect in-flight pinned buffers so that plain CPU accesses fault "
                            "and are caught (guard=1; the default, guard=auto, does this in "
                            "audit and enforce)")
    guard.add_argument("--no-guard", dest="guard", action="store_const", const="0",
                       help="no guard pages (guard=0): only CUDA calls, system calls and "
                            "annotations are checked")
    parser.add_argument("--log", metavar="DIR",
                        help="write reports to DIR/pinguard.<pid> instead of stderr (DIR is "
                             "created if needed)")
    parser.add_argument("--json", action="store_true",
                        help="write reports as JSON lines (log_format=json), for `pinguard "
                             "report`")
    parser.add_argument("--options", metavar="K=V:...", action="append", default=[],
                        help="more PINGUARD_OPTIONS pairs; may be repeated. Precedence: the "
                             "environment's PINGUARD_OPTIONS < --options < the flags above")
    parser.add_argument("--simcuda", action="store_true",
                        help="run the command on simcuda, the simulated CUDA runtime and driver "
                             "(no GPU needed): test a program's synchronization on any machine. "
                             "Its copies and kernels run asynchronously on worker threads, "
                             "SIMCUDA_LATENCY_US (default 2000) after their enqueue. Device code "
                             "cannot run there: see the README")
    parser.add_argument("command", nargs="...", help="the command to run, after --")


def options_for(args, environ_options):
    """The PINGUARD_OPTIONS string for the child: the environment's, then --options, then flags."""
    flags = []
    if args.mode:
        flags.append(("mode", args.mode))
    if args.guard:
        flags.append(("guard", args.guard))
    if args.log:
        flags.append(("log_path", os.path.join(os.path.abspath(args.log), "pinguard")))
    if args.json:
        flags.append(("log_format", "json"))
    # On simcuda the program is under test, not in production: full stacks (the unwinder) are
    # worth their cost, and frame pointers stop at the first library built without them, as
    # Python's and PyTorch's are. Lowest precedence: the user's settings win.
    defaults = "fast_unwind=0" if getattr(args, "simcuda", False) else ""
    return pgenv.merge_options(defaults, environ_options, *args.options, flags)


def check_options(args, environ_options):
    """Refuses (UsageError: status 2, before anything starts) the pairs the shim would ignore
    with a warning: an unknown option, a bad value, a pair without a value. A typo such as
    mode=enforc would otherwise run the program in audit."""
    known = pgoptions.table()
    found = pgoptions.problems(pgenv.parse_options(environ_options), "PINGUARD_OPTIONS", known)
    for text in args.options:
        found += pgoptions.problems(pgenv.parse_options(text), "--options", known)
    if found:
        raise pgenv.UsageError("run: " + "\n  ".join(found) + "\n(the program was not started)")


def main(args, script_dir):
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise pgenv.UsageError("run: no command given (pinguard run [flags] -- cmd args...)")
    check_options(args, os.environ.get("PINGUARD_OPTIONS", ""))
    lib = pgenv.find_library(script_dir)
    simcuda_dir = pgenv.find_simcuda(script_dir) if args.simcuda else None
    if args.log:
        try:
            os.makedirs(args.log, exist_ok=True)
        except OSError as e:
            raise pgenv.UsageError("run: cannot create log directory %s: %s"
                                   % (args.log, e.strerror))
    options = options_for(args, os.environ.get("PINGUARD_OPTIONS", ""))
    child_env = pgenv.child_environment(lib, options, simcuda_dir=simcuda_dir)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvpe(command[0], command, child_env)
    except FileNotFoundError:
        print("pinguard: run: %s: command not found" % command[0], file=sys.stderr)
        return 127  # the shell's status for a command that was not found
    except OSError as e:
        print("pinguard: run: %s: %s" % (command[0], e.strerror), file=sys.stderr)
        return 126  # the shell's status for a command that cannot be executed
    return 0  # not reached: exec replaced this process
