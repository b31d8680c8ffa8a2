"""`dbrouter ingest | build | refresh`: the knowledge base from the sources file."""

from __future__ import annotations

import argparse

from dbrouter.cli.common import add_common, print_ingest, warehouse_path
from dbrouter.console import err
from dbrouter.errors import DbrouterError


def cmd_ingest(args) -> int:

    import duckdb

    from dbrouter.kb.build import lock_conflict_message
    from dbrouter.kb.ingest import ingest
    from dbrouter.sources.config import load_sources

    try:  # in place, not atomic: `build` is the atomic path
        report = ingest(load_sources(args.sources), warehouse_path(args), progress=err)
    except duckdb.IOException as exc:
        msg = lock_conflict_message(warehouse_path(args), exc)
        if msg is None:
            raise
        raise DbrouterError(msg) from exc
    print_ingest(report)
    return 0


def cmd_build(args) -> int:
    from dbrouter.kb.build import build_atomically
    from dbrouter.sources.config import load_sources
    from python_udfs.embeddings import resolve_embedder_name

    warehouse = warehouse_path(args)
    existed = warehouse.exists()
    err(f"building the knowledge base for {warehouse} on a copy (embedder {resolve_embedder_name(args.embedder)})")
    try:
        result = build_atomically(load_sources(args.sources), warehouse, args.embedder, progress=err,
                                  on_ingested=print_ingest)
    except KeyboardInterrupt:
        err("dbrouter: build stopped; " + (f"the previous knowledge base in {warehouse} is unchanged" if existed
                                            else f"no knowledge base was written to {warehouse}"))
        raise
    err(f"knowledge base built in {result.dbt_seconds:.1f}s (dbt), {result.seconds:.1f}s in all: "
        f"{result.databases} databases, {'replaced' if result.replaced else 'written to'} {warehouse}")
    return 0


def cmd_refresh(args) -> int:
    from dbrouter.kb.refresh import refresh
    from dbrouter.sources.config import load_sources

    warehouse = warehouse_path(args)
    try:
        result = refresh(load_sources(args.sources), warehouse, args.embedder, force=args.force, progress=err,
                         on_ingested=print_ingest)
    except KeyboardInterrupt:
        err(f"dbrouter: refresh stopped; the previous knowledge base in {warehouse} (if any) is unchanged")
        raise
    if result.build:
        err(f"knowledge base rebuilt in {result.build.dbt_seconds:.1f}s (dbt), {result.seconds:.1f}s in all: "
            f"{result.build.databases} databases in {warehouse}; schema fingerprints recorded")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """``ingest``, ``build``, ``refresh``."""
    sp = sub.add_parser("ingest", help="snapshot the declared databases into the warehouse (in place, not atomic: "
                        "an interrupted ingest can leave raw tables newer than the KB; `build` is atomic)")
    add_common(sp, True)
    sp.set_defaults(func=cmd_ingest)
    sp = sub.add_parser("build", help="ingest, then `dbt build` the knowledge base, atomically: on a copy that "
                        "replaces the warehouse only when complete (a failure keeps the previous KB)")
    add_common(sp, True)
    sp.set_defaults(func=cmd_build)
    refresh_help = ("for schedules: check every source's schema (catalog only, no rows) against the last refresh "
                    "and run the atomic `build` only when a schema, the sources file or an examples/statements file "
                    "changed; a data change alone (rows, sample values) does not rebuild (use --force). Exit 0: "
                    "nothing to do or rebuilt; 2: error")
    sp = sub.add_parser("refresh", help=refresh_help, description=refresh_help)
    add_common(sp, True)
    sp.add_argument("--force", action="store_true", help="rebuild even when nothing changed")
    sp.set_defaults(func=cmd_refresh)
