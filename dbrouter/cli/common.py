"""What every command shares: the warehouse and embedder options and the KB connection."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from dbrouter.console import err
from dbrouter.kb.connect import connect
from dbrouter.kb.ingest import IngestReport, print_issues
from python_udfs.embeddings import EMBEDDERS

DEFAULT_WAREHOUSE = "dbrouter.duckdb"


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
    return Path(args.warehouse or os.environ.get("DBROUTER_WAREHOUSE") or DEFAULT_WAREHOUSE)


def connect_kb(args: argparse.Namespace, read_only: bool = True):
    """The warehouse of ``--warehouse`` with the UDFs of ``--embedder`` (:func:`dbrouter.kb.connect.connect`)."""
    return connect(warehouse_path(args), read_only=read_only, embedder=args.embedder)


def print_ingest(report: IngestReport) -> None:
    """The ingest summary and its issues, on stderr."""
    err(report.summary())
    print_issues(report)
