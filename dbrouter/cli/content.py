"""`dbrouter statements ... | examples ...`: the domain statements and question/SQL examples of the KB."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from dbrouter.cli.common import add_common, connect_kb, warehouse_path
from dbrouter.console import err
from dbrouter.errors import DbrouterError, WarehouseError
from dbrouter.textin import read_stdin


def _writable(args, action: str):
    """The warehouse opened read-write, or an error saying which process holds it (a running serve)."""
    from dbrouter.kb.build import lock_conflict_message

    try:
        return connect_kb(args, read_only=False)
    except WarehouseError as exc:
        msg = lock_conflict_message(warehouse_path(args), exc.__cause__ or exc, action)
        if msg is None:
            raise
        raise DbrouterError(msg) from exc


def cmd_statements_add(args) -> int:
    from dbrouter.kb.tables import add_statement
    from dbrouter.retrieval import require_database

    statement = read_stdin().rstrip("\r\n") if args.statement == "-" else args.statement
    con = _writable(args, "add a statement to")
    try:
        require_database(con, args.db)
        try:
            add_statement(con, args.db, statement)
        except ValueError as exc:
            raise DbrouterError(str(exc)) from exc
    finally:
        con.close()
    err(f"statement stored for {args.db} (verbatim, in dbrouter_user.statements); "
         "run `dbrouter build` (or dbt build) to structure and embed it")
    return 0


def cmd_statements_list(args) -> int:
    from dbrouter.retrieval import list_statements

    con = connect_kb(args)
    try:
        statements = list_statements(con, args.db)
    finally:
        con.close()
    for st in statements:
        print(f"[{st.db_id}] {st.statement}")
        if st.expression and st.snippet:
            print(f"    -> '{st.expression}' refers to {st.snippet}   ({st.structure_status}, {st.structured_by})")
        else:
            print(f"    -> not structured ({st.structure_status}, {st.structured_by})")
        if st.problems:
            print(f"    problems: {'; '.join(st.problems)}")
    err(f"{len(statements)} statements")
    return 0


def _llm_step(args, step, what: str, select: str) -> int:
    """Run an LLM step (structuring / describing) and rebuild the models that read its output.

    Args:
        args: the parsed command line (``--db``, ``--redo``, ``--verbose``, warehouse, embedder).
        step: :func:`dbrouter.enrich.structuring.structure_with_llm` or :func:`dbrouter.enrich.describing.describe_with_llm`.
        what: what the step produces, for the "no LLM" message.
        select: the dbt selector rebuilt when the step wrote anything.

    Returns:
        The exit code (0).
    """
    from dbrouter.kb.dbt_runner import run_dbt
    from dbrouter.llm import LLMClient

    llm = LLMClient.from_env()
    if llm is None:
        err(f"no LLM configured (DBROUTER_LLM_BASE_URL is unset): {what} keep the rule-based form "
             "that `dbt build` computes; nothing to do")
        return 0
    con = connect_kb(args, read_only=False)
    try:
        report = step(con, llm, args.db, args.redo, progress=err)
    finally:
        con.close()
    err(report.summary() + f"; LLM calls {llm.stats.calls}, cache hits {llm.stats.cache_hits}")
    for note in report.notes[:5]:
        err(f"  {note}")
    if report.written:
        run_dbt(["build", "--select", select], warehouse_path(args), args.embedder, quiet=not args.verbose)
        err(f"rebuilt {select}")
    return 0


def cmd_statements_structure(args) -> int:
    from dbrouter.enrich.structuring import structure_with_llm

    return _llm_step(args, structure_with_llm, "statements", "int_statements_structured+")


def cmd_examples_add(args) -> int:
    """`examples add`: a verified question/SQL pair into the user examples (the next build uses it)."""
    from dbrouter.answer.guard import UnsafeSQL, check_read_only
    from dbrouter.answer.runners import target_for
    from dbrouter.kb.tables import add_example
    from dbrouter.retrieval import require_database
    from dbrouter.sources.base import NoDataSource

    db, question, sql = args.db, args.question, args.sql
    if args.from_answer:
        text = read_stdin() if args.from_answer == "-" else Path(args.from_answer).read_text(encoding="utf-8")
        try:
            answer = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DbrouterError(f"--from-answer: not the JSON of `dbrouter ask --json` ({exc})") from None
        if not isinstance(answer, dict) or answer.get("status") != "ok" or not answer.get("sql"):
            raise DbrouterError("--from-answer: only an answer that ran (status ok, with SQL) can become an example; "
                                "check its result first")
        db, question, sql = db or answer.get("db_id"), question or answer.get("question"), sql or answer.get("sql")
    if not (db and question and sql):
        raise DbrouterError("give --db, --question and --sql (or --from-answer FILE from `dbrouter ask --json`)")
    con = _writable(args, "add an example to")
    try:
        require_database(con, db)
        try:
            dialect = target_for(con, db).dialect
        except NoDataSource as exc:
            dialect = exc.dialect or "duckdb"
        try:  # the example's SQL must be one read-only SELECT in its database's dialect
            check_read_only(sql, dialect)
        except UnsafeSQL as exc:
            raise DbrouterError(f"the example's SQL is refused: {exc}") from None
        try:
            add_example(con, db, question, sql, added_by=args.added_by)
        except ValueError as exc:
            raise DbrouterError(str(exc)) from exc
    finally:
        con.close()
    err(f"example stored for {db} (in dbrouter_user.examples); run `dbrouter build` to embed it and route with it")
    return 0


def cmd_examples_describe(args) -> int:
    from dbrouter.enrich.describing import describe_with_llm

    return _llm_step(args, describe_with_llm, "examples", "int_examples_described+")


def cmd_retrieve(args) -> int:

    from dbrouter.retrieval import RetrievedExample, RetrievedStatement, retrieve_examples, retrieve_statements

    fn = retrieve_statements if args.command == "statements" else retrieve_examples
    con = connect_kb(args)
    try:
        found = fn(con, args.question, args.db, args.k)
    finally:
        con.close()
    if args.json:
        print(json.dumps([asdict(f) for f in found]))
    elif not found:
        print("nothing found" if (args.question or "").strip() else "nothing found: the question is empty")
    for f in found if not args.json else []:
        if isinstance(f, RetrievedStatement):
            print(f"{f.rank}. [{f.db_id}] {f.statement}   score {f.score} (matched: {f.matched_text!r})")
        elif isinstance(f, RetrievedExample):
            print(f"{f.rank}. [{f.db_id}] stage {f.stage}, score {f.score} >= {f.threshold}: {f.question}\n   {f.sql}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """``statements add | list | structure | retrieve`` and ``examples describe | retrieve``."""

    def llm_step(group, name: str, helptext: str, redo_help: str, func) -> None:
        sp = group.add_parser(name, help=helptext)
        add_common(sp)
        sp.add_argument("--db", help="only this database")
        sp.add_argument("--redo", action="store_true", help=redo_help)
        sp.add_argument("--verbose", action="store_true", help="show dbt's output")
        sp.set_defaults(func=func)

    def retrieve(group, helptext: str, k: int) -> None:
        sp = group.add_parser("retrieve", help=helptext)
        add_common(sp)
        sp.add_argument("question")
        sp.add_argument("--db", help="only this database")
        sp.add_argument("--k", type=int, default=k)
        sp.add_argument("--json", action="store_true")
        sp.set_defaults(func=cmd_retrieve)

    st = sub.add_parser("statements", help="domain statements: add, list, structure with an LLM")
    stsub = st.add_subparsers(dest="statements_command", required=True)
    sp = stsub.add_parser("add", help="store a statement verbatim for a database")
    add_common(sp)
    sp.add_argument("--db", required=True, help="database id")
    sp.add_argument("statement", help="the statement, or - to read it from stdin")
    sp.set_defaults(func=cmd_statements_add)
    sp = stsub.add_parser("list", help="statements with their structured form and problems")
    add_common(sp)
    sp.add_argument("--db", help="only this database")
    sp.set_defaults(func=cmd_statements_list)
    llm_step(stsub, "structure", "structure statements with the configured LLM (rules otherwise)",
             "ask again for statements already structured", cmd_statements_structure)
    retrieve(stsub, "statements for a question (sub-string based retrieval)", 4)

    exs = sub.add_parser("examples", help="question/SQL examples: add a verified one, describe with an LLM, retrieve")
    exsub = exs.add_subparsers(dest="examples_command", required=True)
    sp = exsub.add_parser("add", help="store a verified question/SQL pair for a database (used from the next build)")
    add_common(sp)
    sp.add_argument("--db", help="database id")
    sp.add_argument("--question", help="the question")
    sp.add_argument("--sql", help="the SQL that answers it (one read-only SELECT)")
    sp.add_argument("--from-answer", metavar="FILE",
                    help="take db, question and SQL from `dbrouter ask --json` output (- reads stdin)")
    sp.add_argument("--added-by", default="cli", help="who verified it (stored with the example)")
    sp.set_defaults(func=cmd_examples_add)
    llm_step(exsub, "describe", "normalised question, main clause, entities, paraphrases by the LLM",
             "ask again for examples already described", cmd_examples_describe)
    retrieve(exsub, "examples for a question (the progressive cascade)", 3)
