"""What every command shares: the warehouse and embedder options and the KB connection.

The command modules import the library inside their handlers: building the parser (and so every
command, `--help` included) must not load duckdb, numpy, pyarrow and sqlglot, which took the
CLI's start-up from 0.4 s to 1.5 s when they were imported at the top.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from dbrouter import settings
from dbrouter.console import err
from python_udfs.embedder_names import EMBEDDERS

if TYPE_CHECKING:
    from dbrouter.kb.ingest import IngestReport

DEFAULT_WAREHOUSE = str(settings.BY_NAME["DBROUTER_WAREHOUSE"].default)


def positive_int(text: str) -> int:
    """argparse type: a whole number of at least 1 (``--max-columns``, ``--max-rows`` ...)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def add_warehouse(sp: argparse.ArgumentParser, what: str = "DuckDB warehouse file") -> None:
    """``--warehouse`` (default ``$DBROUTER_WAREHOUSE``, then :data:`DEFAULT_WAREHOUSE`)."""
    sp.add_argument("--warehouse", help=f"{what} (default $DBROUTER_WAREHOUSE or {DEFAULT_WAREHOUSE})")


def add_embedder(sp: argparse.ArgumentParser) -> None:
    """``--embedder``, one of the embedders of :data:`python_udfs.embeddings.EMBEDDERS`."""
    sp.add_argument("--embedder", choices=EMBEDDERS, help="embedder (default $DBROUTER_EMBEDDER or minilm)")


def add_common(sp: argparse.ArgumentParser, sources: bool = False) -> None:
    """``--warehouse`` and ``--embedder``, and with ``sources`` the required ``--sources`` file."""
    add_warehouse(sp)
    add_embedder(sp)
    if sources:
        sp.add_argument("--sources", required=True, help="sources YAML file declaring the databases")


def warehouse_path(args: argparse.Namespace) -> Path:
    """The warehouse file a command works on."""
    return Path(args.warehouse or settings.get("DBROUTER_WAREHOUSE") or DEFAULT_WAREHOUSE)


def connect_kb(args: argparse.Namespace, read_only: bool = True):
    """The warehouse of ``--warehouse`` with the UDFs of ``--embedder`` (:func:`dbrouter.kb.connect.connect`).

    Without the plain-named entry points: the commands call dbrouter's functions, which name the
    path's, and a one-question process would spend ~60-100 ms of CPU creating them.
    """
    from dbrouter.kb.connect import connect

    return connect(warehouse_path(args), read_only=read_only, embedder=args.embedder, plain_names=False)


def print_ingest(report: IngestReport) -> None:
    """The ingest summary and its issues, on stderr."""
    from dbrouter.kb.ingest import print_issues

    err(report.summary())
    print_issues(report)


def warehouse_failure(exc: Exception, warehouse: object = None) -> str:
    """What to tell the user when a DuckDB query on the knowledge base failed: a KB built by another
    version of dbrouter needs a rebuild (:func:`dbrouter.kb.connect.another_version`); anything else
    is most often the embedder (a UDF failing inside SQL) or a damaged file.

    Args:
        exc: the DuckDB error.
        warehouse: the KB's path, for the message (None: "the warehouse").

    Returns:
        The message, without the ``dbrouter: error:`` prefix.
    """
    from dbrouter.kb.connect import another_version

    where = warehouse or "the warehouse"
    if (other := another_version(exc, where)) is not None:
        return other
    detail = " ".join(str(exc).split())
    return (f"the warehouse query failed: {detail}. Check the embedder (--embedder or $DBROUTER_EMBEDDER: the one "
            f"the knowledge base was built with, and it must load) and rebuild {where} with `dbrouter build` if it is "
            "damaged")
