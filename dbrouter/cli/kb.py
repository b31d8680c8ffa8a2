"""`dbrouter ingest | build | refresh`: the knowledge base from the sources file."""

from __future__ import annotations

import argparse

from dbrouter.cli.common import add_common, print_ingest, warehouse_path
from dbrouter.console import err
from dbrouter.errors import DbrouterError, SourcesFailed
from dbrouter.feedback.log import log_path


def failed_sources(report) -> list:
    """The error issues of an ingest report: databases, files or sources that were left out."""
    return [i for i in report.issues if i.severity == "error"]


def _strict(args):
    """The ``on_ingested`` of build/refresh: print the report, then stop unless every source was read
    (a scheduled job must not replace a knowledge base by one missing a database it had)."""

    def check(report) -> None:
        print_ingest(report)
        failed = failed_sources(report)
        if failed and not args.allow_partial:
            raise SourcesFailed(f"{len(failed)} source error(s) (listed above: first {failed[0].db_id}: "
                                f"{failed[0].message}); fix them, or pass --allow-partial to build without them")

    return check


def cmd_ingest(args) -> int:

    import duckdb

    from dbrouter.kb.build import lock_conflict_message
    from dbrouter.kb.changes import changes_path
    from dbrouter.kb.ingest import ingest
    from dbrouter.sources.config import load_sources

    try:  # in place, not atomic: `build` is the atomic path
        report = ingest(load_sources(args.sources), warehouse_path(args), progress=err,
                        query_log=log_path(warehouse_path(args)), changes=changes_path(warehouse_path(args)))
    except duckdb.IOException as exc:
        msg = lock_conflict_message(warehouse_path(args), exc)
        if msg is None:
            raise
        raise DbrouterError(msg) from exc
    print_ingest(report)
    failed = failed_sources(report)
    if failed and not args.allow_partial:
        err(f"dbrouter: error: {len(failed)} source error(s), listed above: the raw tables hold the sources that "
            "were read; fix the others (or pass --allow-partial to exit 0 on a partial ingest)")
        return 2
    return 0


def cmd_build(args) -> int:
    from dbrouter.kb.build import build_atomically
    from dbrouter.sources.config import load_sources
    from python_udfs.embeddings import resolve_embedder_name

    warehouse = warehouse_path(args)
    existed = warehouse.exists()
    err(f"building the knowledge base for {warehouse} (embedder {resolve_embedder_name(args.embedder)})")
    try:
        result = build_atomically(load_sources(args.sources), warehouse, args.embedder, progress=err,
                                  on_ingested=_strict(args), force=args.force)
    except KeyboardInterrupt:
        err("dbrouter: build stopped; " + (f"the previous knowledge base in {warehouse} is unchanged" if existed
                                            else f"no knowledge base was written to {warehouse}"))
        raise
    if result.unchanged:
        err(f"nothing changed since the build of {result.since} (sources, kept examples and statements, dbt "
            f"project, embedder, software): {warehouse} left as it is ({result.seconds:.1f}s); --force rebuilds")
        return 0
    err(f"knowledge base built in {result.dbt_seconds:.1f}s (dbt), {result.seconds:.1f}s in all: "
        f"{result.databases} databases, {'replaced' if result.replaced else 'written to'} {warehouse}")
    return 0


def cmd_refresh(args) -> int:
    from dbrouter.kb.refresh import refresh
    from dbrouter.sources.config import load_sources

    warehouse = warehouse_path(args)
    try:
        result = refresh(load_sources(args.sources), warehouse, args.embedder, force=args.force, progress=err,
                         on_ingested=_strict(args))
    except KeyboardInterrupt:
        err(f"dbrouter: refresh stopped; the previous knowledge base in {warehouse} (if any) is unchanged")
        raise
    if result.build and result.build.unchanged:
        err(f"the sources' content, the kept examples and statements, the dbt project, embedder and software are "
            f"as the build of {result.build.since} found them: {warehouse} left as it is; schema fingerprints recorded")
    elif result.build:
        err(f"knowledge base rebuilt in {result.build.dbt_seconds:.1f}s (dbt), {result.seconds:.1f}s in all: "
            f"{result.build.databases} databases in {warehouse}; schema fingerprints recorded")
    return 0


def _partial(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--allow-partial", action="store_true",
                    help="build even when a source fails (it is left out and listed); default: a failed source is "
                         "an error (exit 2) and the previous knowledge base stays")


def register(sub: argparse._SubParsersAction) -> None:
    """``ingest``, ``build``, ``refresh``."""
    sp = sub.add_parser("ingest", help="snapshot the declared databases into the warehouse (in place, not atomic: "
                        "an interrupted ingest can leave raw tables newer than the KB; `build` is atomic)")
    add_common(sp, True)
    _partial(sp)
    sp.set_defaults(func=cmd_ingest)
    sp = sub.add_parser("build", help="ingest, then `dbt build` the knowledge base, atomically: on a copy that "
                        "replaces the warehouse only when complete (a failure keeps the previous KB)")
    add_common(sp, True)
    _partial(sp)
    sp.add_argument("--force", action="store_true",
                    help="rebuild even when nothing changed since the last build (default: a build whose sources, "
                         "kept examples and statements, dbt project, embedder and software are all unchanged "
                         "leaves the knowledge base as it is, without running dbt)")
    sp.set_defaults(func=cmd_build)
    refresh_help = ("for schedules: check every source's schema (catalog only, no rows) against the last refresh "
                    "and run the atomic `build` only when a schema, the sources file or an examples/statements file "
                    "changed; a data change alone (rows, sample values) does not rebuild (use --force). Exit 0: "
                    "nothing to do or rebuilt; 2: error")
    sp = sub.add_parser("refresh", help=refresh_help, description=refresh_help)
    add_common(sp, True)
    sp.add_argument("--force", action="store_true", help="rebuild even when nothing changed")
    _partial(sp)
    sp.set_defaults(func=cmd_refresh)
