"""The `dbrouter` command line: argument parsing and printing; the work is done by the library."""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path

from typing import TYPE_CHECKING

from dbrouter.console import err, shown
from dbrouter.errors import DbrouterError
from dbrouter.textin import check_arguments, read_stdin, stdin_lines

if TYPE_CHECKING:
    from dbrouter.evidence import RouteEvidence
    from dbrouter.routing import RouteResult

DEFAULT_WAREHOUSE = "dbrouter.duckdb"


def _warehouse(args) -> Path:
    return Path(args.warehouse or os.environ.get("DBROUTER_WAREHOUSE") or DEFAULT_WAREHOUSE)


def _connect(args, read_only: bool = True):
    """The warehouse of ``--warehouse`` with the UDFs of ``--embedder`` (:func:`dbrouter.warehouse.connect`)."""
    from dbrouter.warehouse import connect

    return connect(_warehouse(args), read_only=read_only, embedder=args.embedder)


def _print_ingest(report) -> None:
    from dbrouter.ingest import print_issues

    err(report.summary())
    print_issues(report)


def cmd_ingest(args) -> int:
    import duckdb

    from dbrouter.build import lock_conflict_message
    from dbrouter.ingest import ingest
    from dbrouter.sources import load_sources

    try:  # in place, not atomic: `build` is the atomic path
        report = ingest(load_sources(args.sources), _warehouse(args), progress=err)
    except duckdb.IOException as exc:
        msg = lock_conflict_message(_warehouse(args), exc)
        if msg is None:
            raise
        raise DbrouterError(msg) from exc
    _print_ingest(report)
    return 0


def cmd_build(args) -> int:
    from dbrouter.build import build_atomically
    from dbrouter.sources import load_sources
    from python_udfs.embeddings import resolve_embedder_name

    warehouse = _warehouse(args)
    existed = warehouse.exists()
    err(f"building the knowledge base for {warehouse} on a copy (embedder {resolve_embedder_name(args.embedder)})")
    try:
        result = build_atomically(load_sources(args.sources), warehouse, args.embedder, progress=err,
                                  on_ingested=_print_ingest)
    except KeyboardInterrupt:
        err("dbrouter: build stopped; " + (f"the previous knowledge base in {warehouse} is unchanged" if existed
                                            else f"no knowledge base was written to {warehouse}"))
        raise
    err(f"knowledge base built in {result.dbt_seconds:.1f}s (dbt), {result.seconds:.1f}s in all: "
        f"{result.databases} databases, {'replaced' if result.replaced else 'written to'} {warehouse}")
    return 0


def cmd_refresh(args) -> int:
    from dbrouter.refresh import refresh
    from dbrouter.sources import load_sources

    warehouse = _warehouse(args)
    try:
        result = refresh(load_sources(args.sources), warehouse, args.embedder, force=args.force, progress=err,
                         on_ingested=_print_ingest)
    except KeyboardInterrupt:
        err(f"dbrouter: refresh stopped; the previous knowledge base in {warehouse} (if any) is unchanged")
        raise
    if result.build:
        err(f"knowledge base rebuilt in {result.build.dbt_seconds:.1f}s (dbt), {result.seconds:.1f}s in all: "
            f"{result.build.databases} databases in {warehouse}; schema fingerprints recorded")
    return 0


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
        line += (f"ranker score {ev.rank_score:.4f}  (shortlist #{ev.shortlist.rank}, score {c.score:.4f})"
                 if ev.reranked and ev.rank_score is not None else
                 f"shortlist #{ev.shortlist.rank} score {c.score:.4f} (below the re-rank depth: ordered by it)")
        print(line)
        if explain:
            _print_evidence(ev, weights or {})


def _print_evidence(ev: RouteEvidence, weights: dict[str, float]) -> None:
    """Print what ordered a candidate: the ranker score as signal x weight, the mappings behind the
    phrase signals, the join check on the mapped tables, and the closest stored example."""
    from dbrouter.ranker import SIGNAL_TEXT, contributions

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
    if sl.example_similarity is not None:
        print(f"       closest stored example (similarity {sl.example_similarity}), its SQL: {shown(sl.top_example_sql or '')}")
    else:
        print("       no stored example questions for this database")


def _ranker_weights(con) -> dict[str, float]:
    """The ranker weights the warehouse was built with (``route_ranker_weights()``)."""
    import duckdb

    try:
        return json.loads(con.execute("select cast(route_ranker_weights() as varchar)").fetchone()[0])
    except duckdb.CatalogException as exc:
        raise DbrouterError("this knowledge base predates the learned ranker (no route_ranker_weights()): "
                            "rebuild it with `dbrouter build`") from exc


def cmd_route(args) -> int:
    from dbrouter.llm import LLMClient
    from dbrouter.routing import route, route_with_llm

    questions = args.question or stdin_lines()
    llm = None if args.no_llm else LLMClient.from_env()
    if args.llm and llm is None:
        raise DbrouterError("--llm needs an LLM: set DBROUTER_LLM_BASE_URL (and DBROUTER_LLM_MODEL, "
                            "DBROUTER_LLM_API_KEY); see README, Configuration")
    if llm is None and not args.no_llm:
        err("no LLM configured (DBROUTER_LLM_BASE_URL unset): phrase mappings come from the embedding mapper")
    con = _connect(args)
    try:
        weights = _ranker_weights(con) if args.explain else None
        for q in questions:
            if llm is None:
                result = route(con, q, args.k)
            else:
                result, report = route_with_llm(con, llm, q, args.k)
                if report.fallback:
                    err(f"LLM mapping fell back to the embedding mapper for {', '.join(report.fallback)}"
                         f" ({report.malformed} malformed, {report.llm_errors} errors{': ' + report.notes[0] if report.notes else ''})")
            if args.json:
                print(json.dumps({"question": q, "reason": result.reason, "abstained": result.abstained,
                                  "ranking": [c.to_dict() for c in result.candidates]}))
            else:
                _print_ranking(result, args.explain, weights)
    finally:
        con.close()
    return 0


def cmd_ask(args) -> int:
    """`ask`: answer a question with SQL. Exit 0 answered, 2 SQL generation needs an LLM, 1 an error."""
    import duckdb

    from dbrouter.answer import ask, format_answer
    from dbrouter.llm import LLMClient

    try:
        llm = LLMClient.from_env()
        con = _connect(args)
        try:
            answer = ask(con, args.question, args.db, args.linker, llm, args.candidates, args.repair_turns)
        finally:
            con.close()
    except DbrouterError as exc:
        err(f"dbrouter: error: {exc}")
        return 1
    except duckdb.Error as exc:
        err(f"dbrouter: error: the warehouse query failed: {' '.join(str(exc).split())}. Check the embedder "
            "(the one the knowledge base was built with) or rebuild the warehouse with `dbrouter build`")
        return 1
    print(json.dumps(answer.to_json(), default=str) if args.json else format_answer(answer), flush=True)
    if answer.status == "ok":
        return 0
    err(f"dbrouter: {'error: ' if answer.status != 'needs_llm' else ''}{shown(answer.error)}")
    return 2 if answer.status == "needs_llm" else 1


def cmd_link(args) -> int:
    """`link`: the tables and columns a question needs, as the prompt-ready schema text (or JSON)."""
    from dbrouter.answer import check_question
    from dbrouter.linking.columns import render_schema

    question = check_question(args.question)
    con = _connect(args)
    try:
        db = args.db
        if db is None:
            from dbrouter.routing import route

            result = route(con, question, k=1)
            if not result.candidates:
                raise DbrouterError(f"no database to link against: {result.reason or 'routing ranked none'}")
            db = result.best
            err(f"routed to {db} (pass --db to choose)")
        linked = _linked(con, question, db, args.linker)
        text = render_schema(con, db, linked.columns)
    finally:
        con.close()
    for note in linked.notes:
        err(f"dbrouter: {note}")
    if args.json:
        print(json.dumps({"db_id": db, "method": linked.method, "columns": linked.names, "tables": linked.tables,
                          "schema": text, "llm_calls": linked.llm_calls, "notes": linked.notes}))
    else:
        print(text)
    return 0


def _linked(con, question: str, db: str, linker: str):
    """Link with the chosen linker; the agent gets the database's data source when it has one."""
    from dbrouter.linking.linker import link
    from dbrouter.llm import LLMClient

    llm = LLMClient.from_env() if linker == "agent" else None
    target = None
    if llm is not None:
        from dbrouter.execution import NoDataSource, target_for

        try:
            target = target_for(con, db)
        except NoDataSource as exc:
            err(f"dbrouter: {exc}; the agent links without exploring data")
    return link(con, question, db, linker, llm, target)


def cmd_statements_add(args) -> int:
    from dbrouter.build import lock_conflict_message
    from dbrouter.errors import WarehouseError
    from dbrouter.retrieval import require_database
    from dbrouter.store import add_statement

    statement = read_stdin().rstrip("\r\n") if args.statement == "-" else args.statement
    try:
        con = _connect(args, read_only=False)
    except WarehouseError as exc:
        msg = lock_conflict_message(_warehouse(args), exc.__cause__ or exc, "add a statement to")
        if msg is None:
            raise
        raise DbrouterError(msg) from exc
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

    con = _connect(args)
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
        step: :func:`dbrouter.structuring.structure_with_llm` or :func:`dbrouter.describing.describe_with_llm`.
        what: what the step produces, for the "no LLM" message.
        select: the dbt selector rebuilt when the step wrote anything.

    Returns:
        The exit code (0).
    """
    from dbrouter.dbt_runner import run_dbt
    from dbrouter.llm import LLMClient

    llm = LLMClient.from_env()
    if llm is None:
        err(f"no LLM configured (DBROUTER_LLM_BASE_URL is unset): {what} keep the rule-based form "
             "that `dbt build` computes; nothing to do")
        return 0
    con = _connect(args, read_only=False)
    try:
        report = step(con, llm, args.db, args.redo, progress=err)
    finally:
        con.close()
    err(report.summary() + f"; LLM calls {llm.stats.calls}, cache hits {llm.stats.cache_hits}")
    for note in report.notes[:5]:
        err(f"  {note}")
    if report.written:
        run_dbt(["build", "--select", select], _warehouse(args), args.embedder, quiet=not args.verbose)
        err(f"rebuilt {select}")
    return 0


def cmd_statements_structure(args) -> int:
    from dbrouter.structuring import structure_with_llm

    return _llm_step(args, structure_with_llm, "statements", "int_statements_structured+")


def cmd_retrieve(args) -> int:
    from dataclasses import asdict

    from dbrouter.retrieval import retrieve_examples, retrieve_statements

    fn = retrieve_statements if args.command == "statements" else retrieve_examples
    con = _connect(args)
    try:
        found = fn(con, args.question, args.db, args.k)
    finally:
        con.close()
    if args.json:
        print(json.dumps([asdict(f) for f in found]))
    elif not found:
        print("nothing found" if (args.question or "").strip() else "nothing found: the question is empty")
    for f in found if not args.json else []:
        if args.command == "statements":
            print(f"{f.rank}. [{f.db_id}] {f.statement}   score {f.score} (matched: {f.matched_text!r})")
        else:
            print(f"{f.rank}. [{f.db_id}] stage {f.stage}, score {f.score} >= {f.threshold}: {f.question}\n   {f.sql}")
    return 0


def cmd_examples_describe(args) -> int:
    from dbrouter.describing import describe_with_llm

    return _llm_step(args, describe_with_llm, "examples", "int_examples_described+")


def _benchmark_path(args) -> Path:
    path = args.benchmark or os.environ.get("DBROUTER_BENCHMARK")
    if not path:
        raise DbrouterError("give --benchmark DIR (or set DBROUTER_BENCHMARK), e.g. ../shared/benchmarks/spider-route")
    return Path(path)


def _publish(args, report, limit: int | None = None) -> None:
    """Print an eval's report (``--json``) and record it in ``--write`` (:func:`dbrouter.eval.publish.publish`)."""
    from dbrouter.eval.publish import publish

    publish(report, args.json, Path(args.write) if args.write else None, limit)


def _bench_arg(args) -> str:
    """How the benchmark was named on the command line, for the recorded command."""
    return args.benchmark or "$DBROUTER_BENCHMARK"


def cmd_eval_route(args) -> int:
    from dbrouter.eval.benchmark import SETTINGS, load_benchmark
    from dbrouter.eval.route import eval_route, route_report

    bench = load_benchmark(_benchmark_path(args))
    workdir = Path(args.workdir) / bench.name
    workdir.mkdir(parents=True, exist_ok=True)
    settings = SETTINGS if args.setting == "all" else [args.setting]
    for setting in settings:
        m = eval_route(bench, setting, workdir, args.embedder, args.limit, path=args.path, values=args.values)
        command = (f"dbrouter eval route --benchmark {_bench_arg(args)} --setting {setting}"
                   + (" --path sql" if args.path == "sql" else "") + (" --values" if args.values else ""))
        _publish(args, route_report(m, command), args.limit)
    return 0


def cmd_eval_abstain(args) -> int:
    from dbrouter.eval.abstain import abstain_report, eval_abstain
    from dbrouter.eval.benchmark import load_benchmark

    bench = load_benchmark(_benchmark_path(args))
    workdir = Path(args.workdir) / bench.name
    m = eval_abstain(bench, workdir, args.embedder, limit=args.limit)
    _publish(args, abstain_report(m, f"dbrouter eval abstain --benchmark {_bench_arg(args)}"), args.limit)
    return 0


def cmd_eval_build(args) -> int:
    from dbrouter.eval.benchmark import load_benchmark
    from dbrouter.eval.build import build_report, run_build_benchmark

    bench = load_benchmark(_benchmark_path(args))
    result = run_build_benchmark(bench, Path(args.workdir) / f"{bench.name}-build", args.embedder)
    _publish(args, build_report(result, f"dbrouter eval build --benchmark {_bench_arg(args)}"))
    return 0


def cmd_eval_scale(args) -> int:
    from dbrouter.eval.benchmark import load_benchmark
    from dbrouter.eval.scale import run_scale, scale_report

    sources = args.benchmark.split(",") if args.benchmark else [os.environ.get("DBROUTER_BENCHMARK", "")]
    if not all(sources):
        raise DbrouterError("give --benchmark DIR[,DIR...] (or set DBROUTER_BENCHMARK): real schemas to synthesise from")
    questions = [q.question for s in sources for q in load_benchmark(s).test]
    questions = random.Random(0).sample(questions, min(200, len(questions)))
    command = f"dbrouter eval scale --benchmark {args.benchmark} --databases {args.databases}" + (
        f" --embedder {args.embedder}" if args.embedder else "")
    result = run_scale([Path(s) for s in sources], args.databases, Path(args.workdir) / f"scale-{args.databases}",
                       args.embedder, questions)
    _publish(args, scale_report(result, command))
    return 0


def cmd_eval_link(args) -> int:
    """`eval link`: strict recall of the LLM-free linker vs top-k retrieval, gold database given."""
    from dbrouter.eval.benchmark import load_benchmark
    from dbrouter.eval.link import eval_link, link_report

    bench = load_benchmark(_benchmark_path(args))
    result = eval_link(bench, Path(args.workdir) / f"{bench.name}-link", args.embedder, args.limit)
    _publish(args, link_report(result, f"dbrouter eval link --benchmark {_bench_arg(args)}"), args.limit)
    return 0


def cmd_eval_sql(args) -> int:
    """`eval sql`: execution accuracy of the generated SQL; needs an LLM (checked before anything is built)."""
    from dbrouter.eval.benchmark import load_benchmark
    from dbrouter.eval.sql import NO_LLM, eval_sql, sql_report
    from dbrouter.llm import LLMClient

    llm = LLMClient.from_env()
    if llm is None:
        raise DbrouterError(NO_LLM)
    bench = load_benchmark(_benchmark_path(args))
    result = eval_sql(bench, Path(args.workdir) / f"{bench.name}-sql", args.embedder, llm, args.limit,
                      args.candidates, args.repair_turns)
    command = f"dbrouter eval sql --benchmark {_bench_arg(args)} --candidates {args.candidates} " \
              f"--repair-turns {args.repair_turns}"
    _publish(args, sql_report(result, command), args.limit)
    return 0


def cmd_eval_retrieval(args) -> int:
    """`eval statements` / `eval examples`: evaluate, print, record (whole splits only)."""
    from dbrouter.eval.benchmark import load_benchmark
    from dbrouter.eval.examples import eval_examples, examples_report
    from dbrouter.eval.statements import eval_statements, statements_report

    evaluate, report = ((eval_statements, statements_report) if args.eval_command == "statements"
                        else (eval_examples, examples_report))
    bench = load_benchmark(_benchmark_path(args))
    result = evaluate(bench, Path(args.workdir) / f"{bench.name}-{args.eval_command}", args.embedder, args.limit)
    command = f"dbrouter eval {args.eval_command} --benchmark {_bench_arg(args)}"
    _publish(args, report(result, command), args.limit)
    return 0


def cmd_serve(args) -> int:
    """`serve`: the knowledge base over the Postgres wire protocol until Ctrl-C."""
    from dbrouter.serve import ServeConfig, make_server, password_from_env

    config = ServeConfig(_warehouse(args), args.host, args.port, password_from_env(args.password_env),
                         args.allow_remote)
    server = make_server(config)
    host, port = server.server_address[:2]
    err(f"serving {config.warehouse} read-only on postgresql://{host}:{port} "
        f"({'password from $' + args.password_env if config.password else 'no password'}); e.g. "
        f"psql -h {host} -p {port} -c \"select route_query('How many singers do we have?')\"; Ctrl-C stops")
    try:
        server.serve_forever()
    finally:
        server.server_close()
        server.kb.close()
    return 0


def cmd_eval_serve(args) -> int:
    """`eval serve`: throughput and latency of route_query through `dbrouter serve` (concurrent psycopg clients)."""
    from dbrouter.eval.serve import run_serve_load, serve_report

    result = run_serve_load(_warehouse(args), args.requests, args.clients)
    command = f"dbrouter eval serve --warehouse {_warehouse(args)} --requests {args.requests} --clients {args.clients}"
    _publish(args, serve_report(result, command))
    return 0


def cmd_eval_firstrun(args) -> int:
    """`eval firstrun`: distillation, first build, cold `dbrouter route`, warm route_query, in fresh processes."""
    from dbrouter.eval.firstrun import firstrun_report, run_firstrun
    from python_udfs.embeddings import resolve_embedder_name

    embedder = resolve_embedder_name(args.embedder)
    result = run_firstrun(Path(args.sources), Path(args.workdir), embedder, args.runs, args.distill)
    command = (f"dbrouter eval firstrun --sources {args.sources} --runs {args.runs}"
               f"{' --distill' if args.distill else ''}{f' --embedder {args.embedder}' if args.embedder else ''}")
    _publish(args, firstrun_report(result, command))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dbrouter", description="Route questions to the database that can answer them.")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp, sources: bool = False):
        sp.add_argument("--warehouse", help=f"DuckDB warehouse file (default $DBROUTER_WAREHOUSE or {DEFAULT_WAREHOUSE})")
        sp.add_argument("--embedder", choices=["minilm", "m2v", "hash"], help="embedder (default $DBROUTER_EMBEDDER or minilm)")
        if sources:
            sp.add_argument("--sources", required=True, help="sources YAML file declaring the databases")

    def llm_step(group, name: str, helptext: str, redo_help: str, func) -> None:
        sp = group.add_parser(name, help=helptext)
        common(sp)
        sp.add_argument("--db", help="only this database")
        sp.add_argument("--redo", action="store_true", help=redo_help)
        sp.add_argument("--verbose", action="store_true", help="show dbt's output")
        sp.set_defaults(func=func)

    def retrieve(group, helptext: str, k: int) -> None:
        sp = group.add_parser("retrieve", help=helptext)
        common(sp)
        sp.add_argument("question")
        sp.add_argument("--db", help="only this database")
        sp.add_argument("--k", type=int, default=k)
        sp.add_argument("--json", action="store_true")
        sp.set_defaults(func=cmd_retrieve)

    sp = sub.add_parser("ingest", help="snapshot the declared databases into the warehouse (in place, not atomic: "
                        "an interrupted ingest can leave raw tables newer than the KB; `build` is atomic)")
    common(sp, True)
    sp.set_defaults(func=cmd_ingest)
    sp = sub.add_parser("build", help="ingest, then `dbt build` the knowledge base, atomically: on a copy that "
                        "replaces the warehouse only when complete (a failure keeps the previous KB)")
    common(sp, True)
    sp.set_defaults(func=cmd_build)
    refresh_help = ("for schedules: check every source's schema (catalog only, no rows) against the last refresh "
                    "and run the atomic `build` only when a schema, the sources file or an examples/statements file "
                    "changed; a data change alone (rows, sample values) does not rebuild (use --force). Exit 0: "
                    "nothing to do or rebuilt; 2: error")
    sp = sub.add_parser("refresh", help=refresh_help, description=refresh_help)
    common(sp, True)
    sp.add_argument("--force", action="store_true", help="rebuild even when nothing changed")
    sp.set_defaults(func=cmd_refresh)
    sp = sub.add_parser("route", help="rank databases for questions (arguments, or one per stdin line)")
    common(sp)
    sp.add_argument("question", nargs="*")
    sp.add_argument("--k", type=int, default=5, help="candidates to show (default 5)")
    sp.add_argument("--explain", action="store_true", help="show the evidence of each candidate")
    sp.add_argument("--json", action="store_true", help="one JSON line per question")
    g = sp.add_mutually_exclusive_group()
    g.add_argument("--llm", action="store_true",
                   help="require the LLM phrase mapper (default: used when DBROUTER_LLM_BASE_URL is set)")
    g.add_argument("--no-llm", action="store_true", help="never call an LLM, even when one is configured")
    sp.set_defaults(func=cmd_route)
    sp = sub.add_parser("ask", help="answer a question with SQL on the database routing picks (or --db); "
                        "exit 0 answered, 2 needs an LLM, 1 error")
    common(sp)
    sp.add_argument("question", nargs="?")
    sp.add_argument("--db", help="answer from this database (default: route the question)")
    sp.add_argument("--linker", choices=["retrieval", "agent"], default="retrieval",
                    help="schema linking: LLM-free retrieval (default) or the agent (needs an LLM)")
    sp.add_argument("--candidates", type=int, default=5, help="SQL candidates to sample and vote on (default 5)")
    sp.add_argument("--repair-turns", type=int, default=3,
                    help="times a failing candidate gets its error back to fix it (default 3)")
    sp.add_argument("--json", action="store_true", help="print the answer as one JSON object")
    sp.set_defaults(func=cmd_ask)

    sp = sub.add_parser("link", help="schema linking: the tables and columns a question needs (prompt-ready text)")
    common(sp)
    sp.add_argument("question", nargs="?")
    sp.add_argument("--db", help="the database (default: route the question)")
    sp.add_argument("--linker", choices=["retrieval", "agent"], default="retrieval",
                    help="LLM-free retrieval linker (default) or the agent (needs an LLM)")
    sp.add_argument("--json", action="store_true", help="print one JSON object")
    sp.set_defaults(func=cmd_link)

    sp = sub.add_parser("serve", help="serve the knowledge base read-only over the Postgres wire protocol "
                        "(psql, psycopg, BI tools); picks up a rebuilt warehouse without restart")
    sp.add_argument("--warehouse", help=f"DuckDB warehouse file (default $DBROUTER_WAREHOUSE or {DEFAULT_WAREHOUSE})")
    sp.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    sp.add_argument("--port", type=int, default=5433, help="port (default 5433)")
    sp.add_argument("--password-env", metavar="VAR",
                    help="require the password held in environment variable VAR (any user name)")
    sp.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host")
    sp.set_defaults(func=cmd_serve)

    st = sub.add_parser("statements", help="domain statements: add, list, structure with an LLM")
    stsub = st.add_subparsers(dest="statements_command", required=True)
    sp = stsub.add_parser("add", help="store a statement verbatim for a database")
    common(sp)
    sp.add_argument("--db", required=True, help="database id")
    sp.add_argument("statement", help="the statement, or - to read it from stdin")
    sp.set_defaults(func=cmd_statements_add)
    sp = stsub.add_parser("list", help="statements with their structured form and problems")
    common(sp)
    sp.add_argument("--db", help="only this database")
    sp.set_defaults(func=cmd_statements_list)
    llm_step(stsub, "structure", "structure statements with the configured LLM (rules otherwise)",
             "ask again for statements already structured", cmd_statements_structure)
    retrieve(stsub, "statements for a question (sub-string based retrieval)", 4)

    exs = sub.add_parser("examples", help="question/SQL examples: describe with an LLM, retrieve")
    exsub = exs.add_subparsers(dest="examples_command", required=True)
    llm_step(exsub, "describe", "normalised question, main clause, entities, paraphrases by the LLM",
             "ask again for examples already described", cmd_examples_describe)
    retrieve(exsub, "examples for a question (the progressive cascade)", 3)

    ev = sub.add_parser("eval", help="benchmarks (results go to BENCHMARKS.md)")
    evsub = ev.add_subparsers(dest="eval_command", required=True)
    for name, func, helptext in (("route", cmd_eval_route, "routing accuracy and latency"),
                                 ("build", cmd_eval_build, "KB build, no-op rebuild, one-database change"),
                                 ("scale", cmd_eval_scale, "synthetic repository of many databases: build, latency, memory"),
                                 ("statements", cmd_eval_retrieval, "statement retrieval: SbR vs cosine vs BM25"),
                                 ("examples", cmd_eval_retrieval, "example cascade: per-stage firing and precision"),
                                 ("link", cmd_eval_link, "schema linking strict recall (SRR), gold database given"),
                                 ("abstain", cmd_eval_abstain, "abstention: out-of-repository questions refused, "
                                  "in-repository R@1 it costs"),
                                 ("sql", cmd_eval_sql, "execution accuracy (EX) of generated SQL; needs an LLM")):
        sp = evsub.add_parser(name, help=helptext)
        sp.add_argument("--benchmark", help="benchmark directory (or $DBROUTER_BENCHMARK)")
        sp.add_argument("--embedder", choices=["minilm", "m2v", "hash"])
        sp.add_argument("--workdir", default=".dbrouter/eval", help="where evaluation warehouses live")
        sp.add_argument("--write", default="BENCHMARKS.md", help="markdown file to record results in ('' to skip)")
        sp.add_argument("--json", action="store_true", help="print one JSON line per setting")
        if name == "route":
            sp.add_argument("--setting", default="in-domain",
                            choices=["in-domain", "schema-only", "cross-domain", "all"])
            sp.add_argument("--path", default="udf", choices=["udf", "sql"],
                            help="udf: route_query_ranked_udf through dbrouter.connect (default); sql: "
                                 "route_query_ranked_sql on a plain DuckDB connection that registered nothing")
            sp.add_argument("--values", action="store_true",
                            help="give the KB sample values read from the benchmark's SQL dumps (sql/<db_id>.sql)")
        if name == "scale":
            sp.add_argument("--databases", type=int, default=10_000, help="synthetic databases (default 10000)")
        if name == "sql":
            sp.add_argument("--candidates", type=int, default=5, help="SQL candidates per question (default 5)")
            sp.add_argument("--repair-turns", type=int, default=3, help="repair turns per candidate (default 3)")
        if name in ("route", "statements", "examples", "link", "sql", "abstain"):
            sp.add_argument("--limit", type=int, help="only the first N test questions (smoke runs; not recorded)")
        sp.set_defaults(func=func)
    sp = evsub.add_parser("serve", help="load test of `dbrouter serve`: route_query throughput and p50/p95 latency")
    sp.add_argument("--warehouse", help=f"a built KB with example questions (default $DBROUTER_WAREHOUSE or "
                    f"{DEFAULT_WAREHOUSE})")
    sp.add_argument("--requests", type=int, default=200, help="requests in all (default 200)")
    sp.add_argument("--clients", type=int, default=4, help="concurrent psycopg clients (default 4)")
    sp.add_argument("--write", default="BENCHMARKS.md", help="markdown file to record results in ('' to skip)")
    sp.add_argument("--json", action="store_true", help="print one JSON line")
    sp.set_defaults(func=cmd_eval_serve)
    sp = evsub.add_parser("firstrun", help="what a new user waits for: distillation, first build, cold and warm "
                          "routing, in fresh processes")
    sp.add_argument("--sources", default="demo/sources.yml", help="sources file to build (default demo/sources.yml)")
    sp.add_argument("--workdir", default=".dbrouter/eval/firstrun", help="scratch directory (warehouse, model cache)")
    sp.add_argument("--runs", type=int, default=5, help="cold `dbrouter route` processes (default 5)")
    sp.add_argument("--distill", action="store_true", help="also time the one-time distillation (empty model cache)")
    sp.add_argument("--embedder", choices=["minilm", "m2v", "hash"], help="embedder (default $DBROUTER_EMBEDDER or minilm)")
    sp.add_argument("--write", default="BENCHMARKS.md", help="markdown file to record results in ('' to skip)")
    sp.add_argument("--json", action="store_true", help="print one JSON line")
    sp.set_defaults(func=cmd_eval_firstrun)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: arguments (default ``sys.argv[1:]``).

    Returns:
        The exit code: 0, 2 for an error (one ``dbrouter: error: ...`` line on stderr), 130 interrupted.
    """
    import duckdb

    args = parser().parse_args(argv)
    try:
        check_arguments(args)
        return args.func(args)
    except DbrouterError as exc:
        err(f"dbrouter: error: {exc}")
        return 2
    except duckdb.Error as exc:  # e.g. a UDF failing inside SQL (the embedder cannot load)
        detail = " ".join(str(exc).split())
        err(f"dbrouter: error: the warehouse query failed: {detail}. Check the embedder (--embedder or "
            "$DBROUTER_EMBEDDER: the one the knowledge base was built with, and it must load) and rebuild "
            f"{_warehouse(args) if hasattr(args, 'warehouse') else 'the warehouse'} with `dbrouter build` "
            "if it is damaged")
        return 2
    except KeyboardInterrupt:
        err("dbrouter: interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
