"""`dbrouter report`: the query log summed up, as text or a self-contained HTML page."""

from __future__ import annotations

import argparse
from pathlib import Path

from dbrouter.cli.common import add_warehouse, warehouse_path
from dbrouter.console import err
from dbrouter.errors import DbrouterError


def cmd_report(args) -> int:
    """`report`: traffic per database, abstention rate, unanswered questions, slowest calls."""
    from dbrouter.feedback.log import log_path, read
    from dbrouter.feedback.report import html_report, summarize, text_report

    if args.from_kb:
        if args.log:
            raise DbrouterError("--from-kb reads the warehouse's kb_query_log: drop --log")
        entries, title = _kb_entries(warehouse_path(args)), f"kb_query_log of {warehouse_path(args).name}"
    else:
        path = Path(args.log) if args.log else log_path(warehouse_path(args))
        if path is None:
            raise DbrouterError("logging is off (DBROUTER_LOG=off): pass --log FILE, or --from-kb")
        entries, title = list(read(path)), path.name
    summary = summarize(entries, top=args.top)
    print(text_report(summary))
    if args.html:
        Path(args.html).write_text(html_report(summary, f"dbrouter query log: {title}"), encoding="utf-8")
        err(f"HTML report written to {args.html}")
    return 0


def _kb_entries(warehouse: Path) -> list:
    """The warehouse's logged entries (a KB built before the log reached the warehouse has none)."""
    import duckdb

    from dbrouter.feedback.log import read_table

    if not warehouse.is_file():
        raise DbrouterError(f"{warehouse} does not exist: pass --warehouse (the KB whose kb_query_log to read)")
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return read_table(con)
    except duckdb.CatalogException:
        raise DbrouterError(f"{warehouse} has no kb_query_log: rebuild it with this version (`dbrouter build`)") from None
    finally:
        con.close()


def register(sub: argparse._SubParsersAction) -> None:
    """``report``."""
    sp = sub.add_parser("report", help="sum up the query log (routing and answers through serve, mcp and the CLI): "
                        "traffic per database, abstentions, unanswered questions, slowest calls; --html writes a page")
    add_warehouse(sp)
    sp.add_argument("--log", help="the log file (default: $DBROUTER_LOG or <warehouse>.query_log.jsonl)")
    sp.add_argument("--from-kb", action="store_true", help="read the warehouse's kb_query_log instead (every entry "
                    "its builds took in, also from rotated journals)")
    sp.add_argument("--html", metavar="FILE", help="also write a self-contained HTML page with charts")
    sp.add_argument("--top", type=int, default=10, help="rows of each top list (default 10)")
    sp.set_defaults(func=cmd_report)
