"""The `dbrouter` command line: the parser is the union of the command modules' ``register``.

One module per command group (:mod:`~dbrouter.cli.kb`, :mod:`~dbrouter.cli.route`,
:mod:`~dbrouter.cli.answer`, :mod:`~dbrouter.cli.content`, :mod:`~dbrouter.cli.serve`,
:mod:`~dbrouter.cli.eval`), each with its options next to its handler; the work is done by the
library, the CLI parses and prints.
"""

from __future__ import annotations

import argparse
import sys

from dbrouter.cli import answer, content, kb, report, route, serve
from dbrouter.cli import eval as eval_cli
from dbrouter.cli.common import warehouse_path
from dbrouter.console import err, install_handler
from dbrouter.errors import USER_ERRORS
from dbrouter.textin import check_arguments

COMMAND_MODULES = (kb, route, answer, serve, content, report, eval_cli)
"""The command groups, in the order `dbrouter --help` lists them."""


def parser() -> argparse.ArgumentParser:
    """The whole command line parser."""
    from dbrouter import __version__

    p = argparse.ArgumentParser(prog="dbrouter", description="Route questions to the database that can answer them.")
    p.add_argument("--version", action="version", version=f"dbrouter {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for module in COMMAND_MODULES:
        module.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: arguments (default ``sys.argv[1:]``).

    Returns:
        The exit code: 0, 2 for an error (one ``dbrouter: error: ...`` line on stderr), 130 interrupted.
    """
    args = parser().parse_args(argv)
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
        # e.g. a UDF failing inside SQL (the embedder cannot load)
        detail = " ".join(str(exc).split())
        err(f"dbrouter: error: the warehouse query failed: {detail}. Check the embedder (--embedder or "
            "$DBROUTER_EMBEDDER: the one the knowledge base was built with, and it must load) and rebuild "
            f"{warehouse_path(args) if hasattr(args, 'warehouse') else 'the warehouse'} with `dbrouter build` "
            "if it is damaged")
        return 2
    except KeyboardInterrupt:
        err("dbrouter: interrupted")
        return 130



if __name__ == "__main__":
    sys.exit(main())
