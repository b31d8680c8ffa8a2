"""`dbrouter ask | link`: from a question to the tables it needs and the SQL that answers it."""

from __future__ import annotations

import argparse
import json

from dbrouter.cli.common import add_common, connect_kb, positive_int, warehouse_failure, warehouse_path
from dbrouter.console import err, shown
from dbrouter.errors import USER_ERRORS
from dbrouter.linking import LINKERS, MAX_COLUMNS


def cmd_ask(args) -> int:
    """`ask`: answer a question with SQL. Exit 0 answered, 1 an error, 2 SQL generation needs an LLM,
    3 SQL written but not run (the database has no source SQL runs on)."""
    import duckdb

    from dbrouter.answer.ask import Answer, ask, format_answer
    from dbrouter.feedback.log import LogEntry, log_path, record
    from dbrouter.llm import LLMClient

    log = None if args.no_log else log_path(warehouse_path(args))

    def answered() -> Answer:
        llm = LLMClient.from_env()
        con = connect_kb(args)
        try:
            return ask(con, args.question, args.db, args.linker, llm, args.candidates, args.repair_turns,
                       args.max_columns)
        finally:
            con.close()

    try:
        answer = record(log, LogEntry("cli", "ask", args.question, chosen=args.db), answered, Answer.log_entry)
    except USER_ERRORS as exc:
        err(f"dbrouter: error: {exc}")
        return 1
    except duckdb.Error as exc:
        err(f"dbrouter: error: {warehouse_failure(exc, warehouse_path(args))}")
        return 1
    print(json.dumps(answer.to_json(), default=str) if args.json else format_answer(answer), flush=True)
    if answer.status == "ok":
        return 0
    if answer.status == "not_run":
        err("dbrouter: the SQL was written but not run: the database has no source SQL runs on (see the note)")
        return 3
    if args.json:  # the text output already ends with the error; JSON readers get it on stderr too
        err(f"dbrouter: {'error: ' if answer.status != 'needs_llm' else ''}{shown(answer.error)}")
    return 2 if answer.status == "needs_llm" else 1


def cmd_link(args) -> int:
    """`link`: the tables and columns a question needs, as the prompt-ready schema text (or JSON)."""
    from dbrouter.answer.ask import check_question
    from dbrouter.linking.link import link_question
    from dbrouter.llm import LLMClient

    question = check_question(args.question)
    con = connect_kb(args)
    try:
        # routed as `dbrouter route` routes it: with the LLM's mapping when one is configured
        done = link_question(con, question, args.db, args.linker, LLMClient.from_env(), args.max_columns)
    finally:
        con.close()
    if done.routed:
        err(f"routed to {done.db_id} (pass --db to choose)")
    linked = done.linked
    for note in linked.notes:
        err(f"dbrouter: {note}")
    if args.json:
        print(json.dumps({"db_id": done.db_id, "method": linked.method, "columns": linked.names,
                          "tables": linked.tables, "schema": done.schema, "llm_calls": linked.llm_calls,
                          "notes": linked.notes}))
    else:
        print(done.schema)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """``ask`` and ``link``."""
    sp = sub.add_parser("ask", help="answer a question with SQL on the database routing picks (or --db); "
                        "exit 0 answered, 1 error, 2 needs an LLM, 3 SQL written but not run")
    add_common(sp)
    sp.add_argument("question", nargs="?")
    sp.add_argument("--db", help="answer from this database (default: route the question)")
    sp.add_argument("--linker", choices=LINKERS, default="retrieval",
                    help="schema linking: LLM-free retrieval (default) or the agent (needs an LLM)")
    sp.add_argument("--candidates", type=int, default=5, help="SQL candidates to sample and vote on (default 5)")
    sp.add_argument("--repair-turns", type=int, default=3,
                    help="times a failing candidate gets its error back to fix it (default 3)")
    sp.add_argument("--max-columns", type=positive_int, default=MAX_COLUMNS, metavar="N",
                    help=f"most columns the LLM-free linker hands on (default {MAX_COLUMNS})")
    sp.add_argument("--json", action="store_true", help="print the answer as one JSON object")
    sp.add_argument("--no-log", action="store_true",
                    help="do not append the question to the query log (see `dbrouter report`; $DBROUTER_LOG=off)")
    sp.set_defaults(func=cmd_ask)

    sp = sub.add_parser("link", help="schema linking: the tables and columns a question needs (prompt-ready text)")
    add_common(sp)
    sp.add_argument("question", nargs="?")
    sp.add_argument("--db", help="the database (default: route the question)")
    sp.add_argument("--linker", choices=LINKERS, default="retrieval",
                    help="LLM-free retrieval linker (default) or the agent (needs an LLM)")
    sp.add_argument("--max-columns", type=positive_int, default=MAX_COLUMNS, metavar="N",
                    help=f"most columns the LLM-free linker hands on (default {MAX_COLUMNS}); a wider selection, "
                         "or a wider database without stored examples, is linked tables first")
    sp.add_argument("--json", action="store_true", help="print one JSON object")
    sp.set_defaults(func=cmd_link)

