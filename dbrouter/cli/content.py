"""`dbrouter statements ... | examples ...`: the domain statements and question/SQL examples of the KB."""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import asdict
from pathlib import Path

from dbrouter.cli.common import add_common, connect_kb, warehouse_path
from dbrouter.console import err
from dbrouter.errors import DbrouterError, WarehouseError
from dbrouter.textin import read_stdin


def _submit(args, change, action: str) -> str:
    """Apply ``change`` to the warehouse, or, while another process (serve, mcp) holds it, record it
    in the changes journal for the next build (:mod:`dbrouter.kb.changes`).

    Returns:
        Where it went, for the user: ``dbrouter_user.<table>`` or the journal's path.
    """
    from dbrouter.kb.build import lock_conflict_message
    from dbrouter.kb.changes import append, apply, changes_path, load_into

    try:
        con = connect_kb(args, read_only=False)
    except WarehouseError as exc:
        msg = lock_conflict_message(warehouse_path(args), exc.__cause__ or exc, action)
        if msg is None:
            raise
        try:
            change.check()  # what a direct write would refuse is not recorded either
        except ValueError as bad:
            raise DbrouterError(str(bad)) from bad
        path = append(warehouse_path(args), change)
        holder = re.search(r"process \d+ has it open( for writing)?", msg)
        err(f"{holder.group(0) if holder else 'another process has it open'} (a server?): the change is "
            f"recorded in {path} and the next `dbrouter build` applies it")
        return str(path)
    try:
        # what the journal holds goes first: a change never overtakes an earlier recorded one
        load_into(con, changes_path(warehouse_path(args)))
        apply(con, change)
    except ValueError as exc:
        raise DbrouterError(str(exc)) from exc
    finally:
        con.close()
    return "dbrouter_user." + ("examples" if "example" in change.op else "statements")


def _checked(args, db: str) -> None:
    """The database exists (a read-only look; the warehouse may be held by a server)."""
    from dbrouter.retrieval import require_database

    con = connect_kb(args)
    try:
        require_database(con, db)
    finally:
        con.close()


def cmd_statements_add(args) -> int:
    from dbrouter.kb.changes import Change

    statement = read_stdin().rstrip("\r\n") if args.statement == "-" else args.statement
    _checked(args, args.db)
    where = _submit(args, Change("add_statement", db_id=args.db, statement=statement), "add a statement to")
    err(f"statement stored for {args.db} (verbatim, in {where}); "
         "run `dbrouter build` (or dbt build) to structure and embed it")
    return 0


def _print_items(items, kind: str) -> None:
    for it in items:
        state = "pending until the next build" if it.pending else it.origin
        print(f"{it.item_id}  [{it.db_id}] {it.text}   ({state})")
        if it.sql:
            print(f"    {' '.join(it.sql.split())}")
    err(f"{len(items)} {kind}s" + (f", {sum(it.pending for it in items)} pending" if any(it.pending for it in items)
                                    else ""))


def _stored(args) -> tuple[str, list]:
    """The command's kind (``example`` / ``statement``) and its items for ``--db`` / ``--question``."""
    from dbrouter.kb.changes import stored_items

    kind = "example" if args.command == "examples" else "statement"
    con = connect_kb(args)
    try:
        return kind, stored_items(con, warehouse_path(args), kind, args.db, args.question)
    finally:
        con.close()


def cmd_list(args) -> int:
    """`examples list` / `statements list --ids`: what the KB holds, with ids, and what is pending."""
    kind, items = _stored(args)
    if args.json:
        print(json.dumps([asdict(it) for it in items]))
    else:
        _print_items(items, kind)
    return 0


def cmd_remove(args) -> int:
    """`examples remove` / `statements remove`: by id, by database or by question; only what the CLI added."""
    from dbrouter.kb.changes import Change

    if not (args.id or args.db or args.question):
        raise DbrouterError(f"say which {args.command} to remove: --id ID (from `dbrouter {args.command} list`), "
                            "--db DATABASE or --question TEXT")
    kind, items = _stored(args)
    if args.id:
        unknown = set(args.id) - {it.item_id for it in items}
        if unknown:
            raise DbrouterError(f"no {kind} with id {', '.join(sorted(unknown))}"
                                f"{' for the --db/--question given' if args.db or args.question else ''}: "
                                f"see `dbrouter {args.command} list`")
        items = [it for it in items if it.item_id in set(args.id)]
    if not items:
        raise DbrouterError(f"no {kind} matches: see `dbrouter {args.command} list`")
    fixed = [it for it in items if not it.removable]
    if fixed and not (args.id or args.question):  # a whole database: what the CLI added, the files' stay
        err(f"{len(fixed)} {kind}s of {args.db} come from a sources file and stay (remove them there)")
        items, fixed = [it for it in items if it.removable], []
        if not items:
            raise DbrouterError(f"{args.db} has no {kind} added with the CLI")
    if fixed:
        files = sorted({it.origin for it in fixed})
        raise DbrouterError(f"{len(fixed)} of these {kind}s come from a sources file ({', '.join(files[:3])}): "
                            "remove them there; only what `dbrouter ... add` stored is removed here")
    where = _submit(args, Change(f"remove_{kind}s", ids=tuple(it.item_id for it in items)),
                    f"remove {kind}s from")
    for it in items:
        err(f"removed {it.item_id} [{it.db_id}] {it.text}")
    err(f"{len(items)} {kind}s removed from {where}; the next `dbrouter build` routes without them")
    return 0


def cmd_statements_list(args) -> int:
    from dbrouter.retrieval import list_statements

    if args.ids:
        return cmd_list(args)

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


def _llm_step(args, what: str) -> int:
    """`statements structure` / `examples describe`: :func:`dbrouter.enrich.run.enrich`, printed.

    Args:
        args: the parsed command line (``--db``, ``--redo``, ``--verbose``, warehouse, embedder).
        what: ``statements`` or ``examples`` (:data:`dbrouter.enrich.run.STEPS`).

    Returns:
        The exit code (0).
    """
    from dbrouter.enrich.run import STEPS, enrich
    from dbrouter.llm import LLMClient

    llm = LLMClient.from_env()
    if llm is None:
        err(f"no LLM configured (DBROUTER_LLM_BASE_URL is unset): {what} keep the rule-based form "
             "that `dbt build` computes; nothing to do")
        return 0
    done = enrich(warehouse_path(args), STEPS[what], llm, args.db, args.redo, args.embedder, progress=err,
                  quiet=not args.verbose)
    err(done.report.summary() + f"; LLM calls {llm.stats.calls}, cache hits {llm.stats.cache_hits}")
    for note in done.report.notes[:5]:
        err(f"  {note}")
    if done.rebuilt:
        err(f"rebuilt {done.rebuilt}")
    return 0


def cmd_statements_structure(args) -> int:
    return _llm_step(args, "statements")


def cmd_examples_add(args) -> int:
    """`examples add`: a verified question/SQL pair into the user examples (the next build uses it)."""
    from dbrouter.answer.verify import verify_example_sql
    from dbrouter.kb.changes import Change
    from dbrouter.retrieval import require_database

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
    con = connect_kb(args)  # read-only: the warehouse may be held by a server
    try:
        require_database(con, db)
        how = verify_example_sql(con, db, sql)
    finally:
        con.close()
    where = _submit(args, Change("add_example", db_id=db, question=question, sql=sql, added_by=args.added_by),
                    "add an example to")
    checked = "its SQL ran on the database (zero rows)" if how == "ran" else "its tables are the database's"
    err(f"example stored for {db} (in {where}; {checked}); run `dbrouter build` to embed it and route with it")
    return 0


def cmd_examples_describe(args) -> int:
    return _llm_step(args, "examples")


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
            rerank = f", re-rank score {f.score}" if f.similarity is not None and f.score != f.similarity else ""
            print(f"{f.rank}. [{f.db_id}] stage {f.stage}, similarity {f.similarity} >= {f.threshold}{rerank}: "
                  f"{f.question}\n   {f.sql}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """``statements add | list | remove | structure | retrieve`` and ``examples add | list | remove | describe |
    retrieve``."""

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

    def remove(group, kind: str) -> None:
        sp = group.add_parser("remove", help=f"remove {kind}s added with the CLI (by id, database or "
                                             "question; applied at the next build)")
        add_common(sp)
        sp.add_argument("--id", action="append", help=f"a {kind} id from `list` (repeatable)")
        sp.add_argument("--db", help=f"every {kind} of this database added with the CLI (with --id: only among them)")
        sp.add_argument("--question", help="the question or statement text (case ignored)")
        sp.set_defaults(func=cmd_remove)

    st = sub.add_parser("statements", help="domain statements: add, list, remove, structure with an LLM")
    stsub = st.add_subparsers(dest="statements_command", required=True)
    sp = stsub.add_parser("add", help="store a statement verbatim for a database")
    add_common(sp)
    sp.add_argument("--db", required=True, help="database id")
    sp.add_argument("statement", help="the statement, or - to read it from stdin")
    sp.set_defaults(func=cmd_statements_add)
    sp = stsub.add_parser("list", help="statements with their structured form and problems (--ids: ids and origins)")
    add_common(sp)
    sp.add_argument("--db", help="only this database")
    sp.add_argument("--ids", action="store_true", help="list ids, origins and pending changes instead")
    sp.add_argument("--question", help=argparse.SUPPRESS)
    sp.add_argument("--json", action="store_true", help="with --ids: one JSON array")
    sp.set_defaults(func=cmd_statements_list)
    remove(stsub, "statement")
    llm_step(stsub, "structure", "structure statements with the configured LLM (rules otherwise)",
             "ask again for statements already structured", cmd_statements_structure)
    retrieve(stsub, "statements for a question (sub-string based retrieval)", 4)

    exs = sub.add_parser("examples", help="question/SQL examples: add a verified one, list, remove, describe with an "
                                           "LLM, retrieve")
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
    sp = exsub.add_parser("list", help="the KB's examples with their ids and origins, and changes pending")
    add_common(sp)
    sp.add_argument("--db", help="only this database")
    sp.add_argument("--question", help="only this question (case ignored)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_list)
    remove(exsub, "example")
    retrieve(exsub, "examples for a question (the progressive cascade)", 3)
