"""The `dbrouter` command line: the parser is the union of the command modules' ``register``.

One module per command group (:mod:`~dbrouter.cli.kb`, :mod:`~dbrouter.cli.route`,
:mod:`~dbrouter.cli.answer`, :mod:`~dbrouter.cli.content`, :mod:`~dbrouter.cli.serve`,
:mod:`~dbrouter.cli.eval`), each with its options next to its handler; the work is done by the
library, the CLI parses and prints. A command line naming a command builds only its group's parser.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from dbrouter.cli.common import warehouse_failure, warehouse_path
from dbrouter.console import err, install_handler
from dbrouter.errors import USER_ERRORS
from dbrouter.textin import check_arguments

COMMAND_GROUPS: dict[str, tuple[str, ...]] = {
    "kb": ("ingest", "build", "refresh"),
    "route": ("route",),
    "answer": ("ask", "link"),
    "serve": ("serve", "mcp"),
    "content": ("statements", "examples"),
    "report": ("report",),
    "eval": ("eval",),
}
"""The command groups (modules of :mod:`dbrouter.cli`) and the commands each registers, in the order
`dbrouter --help` lists them. A command line that starts with one of these commands gets that
group's parser alone: importing and registering all seven groups cost a one-question `dbrouter
route` ~20 ms of its ~0.5 s of CPU. ``tests/cli/test_cli.py`` checks this table against what each
group registers."""


def parser(groups: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command line parser.

    Args:
        groups: the command groups to register (keys of :data:`COMMAND_GROUPS`); None: all.

    Returns:
        The parser.
    """
    from dbrouter import __version__

    p = argparse.ArgumentParser(prog="dbrouter", description="Route questions to the database that can answer them.")
    p.add_argument("--version", action="version", version=f"dbrouter {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for group in COMMAND_GROUPS if groups is None else groups:
        importlib.import_module(f"dbrouter.cli.{group}").register(sub)
    return p


def _group_of(argv: Sequence[str]) -> str | None:
    """The group of the command ``argv`` starts with, or None (no command first: the whole parser
    lists the commands or says which is unknown)."""
    return next((group for group, commands in COMMAND_GROUPS.items() if argv and argv[0] in commands), None)


def main(argv: list[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: arguments (default ``sys.argv[1:]``).

    Returns:
        The exit code: 0, 2 for an error (one ``dbrouter: error: ...`` line on stderr), 130 interrupted.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    group = _group_of(argv)
    args = parser(None if group is None else [group]).parse_args(argv)
    install_handler()
    try:
        check_arguments(args)
        return args.func(args)
    except USER_ERRORS as exc:
        err(f"dbrouter: error: {exc}")
        return 2
    except Exception as exc:
        duckdb = sys.modules.get("duckdb")  # not imported by a command that never opened a warehouse
        if duckdb is None or not isinstance(exc, duckdb.Error):
            raise
        err(f"dbrouter: error: {warehouse_failure(exc, warehouse_path(args) if hasattr(args, 'warehouse') else None)}")
        return 2
    except KeyboardInterrupt:
        err("dbrouter: interrupted")
        return 130



if __name__ == "__main__":
    sys.exit(main())
