"""`dbrouter route`: rank databases for questions, with the evidence behind each place."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from dbrouter import settings
from dbrouter.cli.common import add_common, connect_kb, warehouse_path
from dbrouter.console import err, shown
from dbrouter.errors import DbrouterError
from dbrouter.textin import stdin_lines

if TYPE_CHECKING:
    from dbrouter.routing.evidence import RouteEvidence
    from dbrouter.routing.route import RouteResult


def cmd_route(args) -> int:
    from dbrouter.llm import LLMClient
    from dbrouter.routing.ranker import examples_note, kb_weights
    from dbrouter.routing.route import RouteResult, route

    questions = args.question or stdin_lines()
    llm = None if args.no_llm else LLMClient.from_env()
    if args.llm and llm is None:
        raise DbrouterError("--llm needs an LLM: set DBROUTER_LLM_BASE_URL (and DBROUTER_LLM_MODEL, "
                            "DBROUTER_LLM_API_KEY); see docs/setup.md")
    if llm is None and not args.no_llm:
        err("no LLM configured (DBROUTER_LLM_BASE_URL unset): phrase mappings come from the embedding mapper")
    from dbrouter.feedback.log import LogEntry, log_path, record

    # a remote endpoint's questions are logged by its serve; here only where $DBROUTER_LOG says
    remote = bool(args.endpoint or settings.env("DBROUTER_ENDPOINT"))
    log = None if args.no_log or (remote and not settings.env("DBROUTER_LOG")) else log_path(warehouse_path(args))
    con = _connect(args)
    try:
        weights = kb_weights(con) if args.explain else None
        note = examples_note(con) if args.explain else None
        for q in questions:
            result = record(log, LogEntry("cli", "route", q), lambda q=q: route(con, q, args.k, llm=llm),
                            RouteResult.log_entry)
            report = result.mapping
            if report is not None and report.fallback:
                err(f"LLM mapping fell back to the embedding mapper for {', '.join(report.fallback)}"
                    f" ({report.malformed} malformed, {report.llm_errors} errors{': ' + report.notes[0] if report.notes else ''})")
            if args.json:
                print(json.dumps({"question": q, "reason": result.reason, "abstained": result.abstained,
                                  "ranking": [c.to_dict() for c in result.candidates]}))
            else:
                _print_ranking(result, args.explain, weights)
                if note:
                    print(f"   note: {note}")
    finally:
        con.close()
    return 0


def _connect(args):
    """The warehouse file, or with ``--endpoint`` (``$DBROUTER_ENDPOINT``) a running `dbrouter serve`.

    Raises:
        DbrouterError: an endpoint and ``--warehouse``/``--embedder`` were both given (the
            endpoint serves its own warehouse with its own embedder), or the endpoint is unreachable.
    """
    url = args.endpoint or settings.env("DBROUTER_ENDPOINT")
    if not url:
        return connect_kb(args)
    if args.warehouse or args.embedder:
        raise DbrouterError("--endpoint routes on the endpoint's own warehouse and embedder: drop --warehouse/"
                            "--embedder (or --endpoint / $DBROUTER_ENDPOINT to open the file here)")
    from dbrouter.serve.client import EndpointConnection

    return EndpointConnection(url)


def _print_ranking(result: RouteResult, explain: bool, weights: dict[str, float] | None = None) -> None:
    """Print one routed question: a line per candidate, and with ``explain`` every number behind its place.

    Args:
        result: the ranking.
        explain: print each candidate's evidence.
        weights: the ranker's weights (``route_ranker_weights()``), for the score's breakdown.
    """
    print(f"Q: {shown(result.question)}")
    if not result.candidates:
        print(f"   (no ranking: {result.reason})")
    elif result.abstained:
        print(f"   (no answer: {result.reason}; the candidates it weighed follow)")
    for c in result.candidates:
        ev = c.evidence
        line = f"  {c.rank}. {c.db_id:<32} "
        # the shortlist's rank fuses the dense and lexical rankings; the number beside it is the dense
        # score alone, so it need not fall with the rank
        line += (f"score {c.score:.4f}  (shortlist #{ev.shortlist.rank}, dense score {c.shortlist_score:.4f})"
                 if c.score is not None else
                 f"shortlist #{ev.shortlist.rank}, dense score {c.shortlist_score:.4f} (below the re-rank depth: "
                 "ordered by its dense score)")
        print(line)
        if explain:
            _print_evidence(ev, weights or {})


def _print_evidence(ev: RouteEvidence, weights: dict[str, float]) -> None:
    """Print what ordered a candidate: the ranker score as signal x weight, the mappings behind the
    phrase signals, the join check on the mapped tables, and the closest stored example."""
    from dbrouter.routing.ranker import SIGNAL_TEXT, contributions

    sl = ev.shortlist
    if not ev.reranked:
        print(f"       shortlist: database {sl.database_similarity}  tables {sl.table_similarity}"
              f"  columns {sl.column_similarity}  examples {sl.example_similarity}")
        return
    print(f"       ranker score {ev.rank_score} = sum of signal x weight:")
    for name, value, weight, part in contributions(ev.signals or {}, weights):
        print(f"         {SIGNAL_TEXT[name]:<46} {value:>7.4f} x {weight:>7.3f} = {part:+.4f}")
    mapped_by = f" [{ev.mapped_by}]" if ev.mapped_by else ""
    print(f"       phrases{mapped_by}: {ev.phrases}, {ev.na_phrases} not mapped to any column "
          f"(the method's coverage exp(-n x) = {ev.coverage})")
    kinds = {"name": "name match", "value": "sample value match", "similar": "similar label",
             "given": "given mapping"}
    for m in ev.mappings or []:
        via = f" via '{m.span}'" if m.span and m.span != m.phrase else ""
        how = f" ({m.similarity}, {kinds.get(m.match or '', 'similarity')})" if m.column else ""
        print(f"         {m.phrase}{via} -> {m.column or 'no column'}{how}")
    tables = sorted({m.column.split('.')[0] for m in ev.mappings or [] if m.column})
    implied = " (through implied edges)" if ev.needs_implied_edges else ""
    joined = "joinable" if ev.connectivity else "not all joinable"
    print(f"       tables of the mapped columns: {', '.join(tables) or 'none'}: {joined}{implied}"
          f"{'; join path ' + ev.join_path if ev.join_path else ''}")
    if ev.example_match:
        print("       first because the question is one of this database's stored example questions")
    if sl.example_similarity is not None:
        print(f"       closest stored example (similarity {sl.example_similarity}), its SQL: {shown(sl.top_example_sql or '')}")
    else:
        print("       no stored example questions for this database")


def register(sub: argparse._SubParsersAction) -> None:
    """``route``."""
    sp = sub.add_parser("route", help="rank databases for questions (arguments, or one per stdin line)")
    add_common(sp)
    sp.add_argument("question", nargs="*")
    sp.add_argument("--k", type=int, default=5, help="candidates to show (default 5)")
    sp.add_argument("--explain", action="store_true", help="show the evidence of each candidate")
    sp.add_argument("--json", action="store_true", help="one JSON line per question")
    sp.add_argument("--no-log", action="store_true",
                    help="do not append the questions to the query log (see `dbrouter report`; $DBROUTER_LOG=off)")
    sp.add_argument("--endpoint", metavar="URL",
                    help="route through a running `dbrouter serve` (postgresql://host:port; password in "
                         "$PGPASSWORD; default $DBROUTER_ENDPOINT) instead of opening the warehouse here: "
                         "no model or warehouse loads in this process")
    g = sp.add_mutually_exclusive_group()
    g.add_argument("--llm", action="store_true",
                   help="require the LLM phrase mapper (default: used when DBROUTER_LLM_BASE_URL is set)")
    g.add_argument("--no-llm", action="store_true", help="never call an LLM, even when one is configured")
    sp.set_defaults(func=cmd_route)
