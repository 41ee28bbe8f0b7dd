"""``meshorder`` command line: reorder, info, compare, plot, generate, refine, bench.

Exit codes: 0 success, 1 bad input (one-line reason, no traceback), 2 bad usage, 130
interrupted (Ctrl-C or SIGTERM).
"""

from __future__ import annotations

import argparse
import sys
import warnings

from .. import __version__
from ..allocator import keep_freed_memory
from ..errors import MeshorderError, MeshWarning, UsageError
from ..termination import interrupt_handled, reader_left, terminate_as_interrupt
from . import bench, compare, generate, info, plot, refine, reorder

SUBCOMMANDS = (reorder, info, compare, plot, generate, refine, bench)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with one sub-parser per subcommand module."""
    parser = argparse.ArgumentParser(
        prog="meshorder",
        description="Read a mesh, build its topology and write a GPU-friendly reordering plan.")
    parser.add_argument("--version", action="version", version=f"meshorder {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.add_parser(sub)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    if issubclass(category, MeshWarning):
        print(f"meshorder: warning: {message}", file=sys.stderr)
    else:
        warnings._showwarnmsg_impl(
            warnings.WarningMessage(message, category, filename, lineno, file, line))


def command() -> int:
    """The ``meshorder`` console command: :func:`main` in a process of its own, whose
    allocator keeps freed memory for the next large array
    (:func:`meshorder.allocator.keep_freed_memory`)."""
    keep_freed_memory()
    return main()


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = build_parser().parse_args(argv)
    warnings.showwarning = _show_warning
    try:
        with terminate_as_interrupt():
            return args.run(args)
    except UsageError as exc:
        print(f"meshorder: usage: {exc}", file=sys.stderr)
        return 2
    except MeshorderError as exc:
        print(f"meshorder: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `meshorder compare ... | head`: the reader left, not an error
        reader_left()
        return 0
    except OSError as exc:
        print(f"meshorder: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        interrupt_handled()
        print("meshorder: interrupted", file=sys.stderr)
        return 130
