"""`dbrouter eval ...`: the benchmarks, each a row of :data:`EVALS` (name, help, its own options, runner).

Every evaluation prints its report (``--json``: one line per setting) and records its block in
``--write`` (BENCHMARKS.md) through :func:`dbrouter.eval.publish.publish`. The evaluation modules
are imported when the command runs: they pull numpy, psycopg and the benchmark loaders (~0.4 s of
start-up that `dbrouter route` should not pay).
"""

from __future__ import annotations

import argparse
import random
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbrouter import settings
from dbrouter.cli.common import DEFAULT_WAREHOUSE, add_embedder, warehouse_path
from dbrouter.errors import DbrouterError
from dbrouter.kb import ROUTE_PATHS

BENCHMARK_OPTIONS = ("benchmark", "workdir")


@dataclass(frozen=True)
class EvalCommand:
    """One ``dbrouter eval`` subcommand.

    Attributes:
        name: the subcommand.
        help: its one-line help.
        run: the evaluation; returns ``(reports, limit)``: the reports to publish and the ``--limit``
            they were measured under (None: whole splits).
        options: adds the subcommand's own options.
        benchmark: takes ``--benchmark`` and ``--workdir``.
        limit: takes ``--limit`` (smoke runs, not recorded).
    """

    name: str
    help: str
    run: Callable[[argparse.Namespace], tuple[list[Any], int | None]]
    options: Callable[[argparse.ArgumentParser], None] = lambda sp: None
    benchmark: bool = True
    limit: bool = False


def benchmark_path(args: argparse.Namespace) -> Path:
    """``--benchmark`` or ``$DBROUTER_BENCHMARK``."""
    path = args.benchmark or settings.env("DBROUTER_BENCHMARK")
    if not path:
        raise DbrouterError("give --benchmark DIR (or set DBROUTER_BENCHMARK), e.g. ../shared/benchmarks/spider-route")
    return Path(path)


def bench_arg(args: argparse.Namespace) -> str:
    """How the benchmark was named on the command line, for the recorded command."""
    return args.benchmark or "$DBROUTER_BENCHMARK"


def _bench(args: argparse.Namespace):
    from dbrouter.eval.benchmark import load_benchmark

    return load_benchmark(benchmark_path(args))


def run_route(args: argparse.Namespace) -> tuple[list[Any], int | None]:
    """Routing accuracy and latency, per setting."""
    from dbrouter.eval.benchmark import SETTINGS
    from dbrouter.eval.route import eval_route, route_report

    bench = _bench(args)
    workdir = Path(args.workdir) / bench.name
    workdir.mkdir(parents=True, exist_ok=True)
    reports = []
    for setting in SETTINGS if args.setting == "all" else [args.setting]:
        m = eval_route(bench, setting, workdir, args.embedder, args.limit, path=args.path, values=args.values)
        command = (f"dbrouter eval route --benchmark {bench_arg(args)} --setting {setting}"
                   + (" --path sql" if args.path == "sql" else "") + (" --values" if args.values else ""))
        reports.append(route_report(m, command))
    return reports, args.limit


def route_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--setting", default="in-domain", choices=["in-domain", "schema-only", "cross-domain", "all"])
    sp.add_argument("--path", default="udf", choices=ROUTE_PATHS,
                    help="udf: route_query_ranked_udf through dbrouter.connect (default); sql: "
                         "route_query_ranked_sql on a plain DuckDB connection that registered nothing")
    sp.add_argument("--values", action="store_true",
                    help="give the KB sample values read from the benchmark's SQL dumps (sql/<db_id>.sql)")


def run_abstain(args: argparse.Namespace) -> tuple[list[Any], int | None]:
    """Abstention: out-of-repository questions refused, the in-repository R@1 it costs."""
    from dbrouter.eval.abstain import abstain_report, eval_abstain

    bench = _bench(args)
    m = eval_abstain(bench, Path(args.workdir) / bench.name, args.embedder, limit=args.limit)
    return [abstain_report(m, f"dbrouter eval abstain --benchmark {bench_arg(args)}")], args.limit


def run_few(args: argparse.Namespace) -> tuple[list[Any], int | None]:
    """1, 3 and 5 examples per database against none: R@1 and the stored questions' paraphrases."""
    from dbrouter.eval.few import eval_few, few_report

    bench = _bench(args)
    m = eval_few(bench, Path(args.workdir) / bench.name, args.embedder, n_test=args.questions, limit=args.limit)
    return [few_report(m, f"dbrouter eval few --benchmark {bench_arg(args)} --questions {args.questions}")], args.limit


def _few_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--questions", type=int, default=500, help="test questions routed per KB (seeded; default 500)")


def run_build(args: argparse.Namespace) -> tuple[list[Any], int | None]:
    """KB build, no-op rebuild, one-database change."""
    from dbrouter.eval.build import build_report, run_build_benchmark

    bench = _bench(args)
    result = run_build_benchmark(bench, Path(args.workdir) / f"{bench.name}-build", args.embedder)
    return [build_report(result, f"dbrouter eval build --benchmark {bench_arg(args)}")], None


def run_scale(args: argparse.Namespace) -> tuple[list[Any], int | None]:
    """A synthetic repository of many databases: build, latency, memory."""
    from dbrouter.eval.benchmark import load_benchmark
    from dbrouter.eval.scale import run_scale as scale
    from dbrouter.eval.scale import scale_report

    sources = args.benchmark.split(",") if args.benchmark else [settings.env("DBROUTER_BENCHMARK") or ""]
    if not all(sources):
        raise DbrouterError("give --benchmark DIR[,DIR...] (or set DBROUTER_BENCHMARK): real schemas to synthesise from")
    questions = [q.question for s in sources for q in load_benchmark(s).test]
    questions = random.Random(0).sample(questions, min(200, len(questions)))
    command = f"dbrouter eval scale --benchmark {args.benchmark} --databases {args.databases}" + (
        f" --wide-columns {args.wide_columns}" if args.wide_columns else "") + (
        f" --embedder {args.embedder}" if args.embedder else "")
    result = scale([Path(s) for s in sources], args.databases, Path(args.workdir) / f"scale-{args.databases}",
                   args.embedder, questions, wide_columns=args.wide_columns)
    return [scale_report(result, command)], None


def run_first_stage(args: argparse.Namespace) -> tuple[list[Any], int | None]:
    """What the two-stage shortlist costs: stage 1's recall, one-stage candidates kept."""
    from dbrouter.eval.first_stage import eval_first_stage, first_stage_report

    bench = _bench(args)
    workdir = Path(args.workdir) / bench.name
    workdir.mkdir(parents=True, exist_ok=True)
    m = eval_first_stage(bench, workdir, args.embedder, limit=args.limit)
    return [first_stage_report(m, f"dbrouter eval first-stage --benchmark {bench_arg(args)}")], args.limit


def run_signals(args: argparse.Namespace) -> tuple[list[Any], int | None]:
    """Where routing loses the gold database: every signal's and stage's ranking, baselines beside."""
    from dbrouter.eval.signals import eval_signals, signals_report

    bench = _bench(args)
    distractors = [d for d in (args.distractors or "").split(",") if d]
    workdir = Path(args.workdir) / "-".join([bench.name, *(Path(d).name for d in distractors)]) / "signals"
    m = eval_signals(bench, workdir, args.embedder, distractors, limit=args.limit)
    command = f"dbrouter eval signals --benchmark {bench_arg(args)}" + (
        f" --distractors {args.distractors}" if distractors else "")
    return [signals_report(m, command)], args.limit


def _signals_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--distractors", default="",
                    help="benchmark directories, comma-separated, whose databases are routed among (their "
                         "questions are not), e.g. ../shared/benchmarks/spider-route,../shared/benchmarks/bird-route-train")


def run_link(args: argparse.Namespace) -> tuple[list[Any], int | None]:
    """Strict recall of the LLM-free linker vs top-k retrieval, gold database given."""
    from dbrouter.eval.link import eval_link, link_report

    bench = _bench(args)
    result = eval_link(bench, Path(args.workdir) / f"{bench.name}-link", args.embedder, args.limit)
    return [link_report(result, f"dbrouter eval link --benchmark {bench_arg(args)}")], args.limit


def run_sql(args: argparse.Namespace) -> tuple[list[Any], int | None]:
    """Execution accuracy of the generated SQL; needs an LLM (checked before anything is built)."""
    from dbrouter.eval.sql import NO_LLM, eval_sql, sql_report
    from dbrouter.llm import LLMClient

    llm = LLMClient.from_env()
    if llm is None:
        raise DbrouterError(NO_LLM)
    bench = _bench(args)
    result = eval_sql(bench, Path(args.workdir) / f"{bench.name}-sql", args.embedder, llm, args.limit,
                      args.candidates, args.repair_turns)
    command = (f"dbrouter eval sql --benchmark {bench_arg(args)} --candidates {args.candidates} "
               f"--repair-turns {args.repair_turns}")
    return [sql_report(result, command)], args.limit


def run_statements(args: argparse.Namespace) -> tuple[list[Any], int | None]:
    """Statement retrieval: SbR vs cosine vs BM25."""
    from dbrouter.eval.statements import eval_statements, statements_report

    bench = _bench(args)
    result = eval_statements(bench, Path(args.workdir) / f"{bench.name}-statements", args.embedder, args.limit)
    return [statements_report(result, f"dbrouter eval statements --benchmark {bench_arg(args)}")], args.limit


def run_examples(args: argparse.Namespace) -> tuple[list[Any], int | None]:
    """The example cascade: per-stage firing and precision."""
    from dbrouter.eval.examples import eval_examples, examples_report

    bench = _bench(args)
    result = eval_examples(bench, Path(args.workdir) / f"{bench.name}-examples", args.embedder, args.limit)
    return [examples_report(result, f"dbrouter eval examples --benchmark {bench_arg(args)}")], args.limit


def run_serve(args: argparse.Namespace) -> tuple[list[Any], int | None]:
    """Throughput and latency of route_query through `dbrouter serve` (concurrent psycopg clients)."""
    from dbrouter.eval.serve import run_serve_load, serve_report

    try:
        levels = tuple(int(n) for n in str(args.clients).split(","))
    except ValueError:
        raise DbrouterError(f"--clients {args.clients}: give client counts separated by commas, e.g. 1,4,16") from None
    result = run_serve_load(warehouse_path(args), args.requests, levels, args.hostile, args.connect_each)
    command = (f"dbrouter eval serve --warehouse {warehouse_path(args)} --requests {args.requests} "
               f"--clients {args.clients}{' --hostile' if args.hostile else ''}"
               f"{' --connect-each' if args.connect_each else ''}")
    return [serve_report(result, command)], None


def run_mcp(args: argparse.Namespace) -> tuple[list[Any], int | None]:
    """Round-trip latency of `dbrouter mcp`'s tools through the MCP SDK's stdio client."""
    from dbrouter.eval.mcp import mcp_report, run_mcp_latency

    result = run_mcp_latency(warehouse_path(args), args.requests)
    return [mcp_report(result, f"dbrouter eval mcp --warehouse {warehouse_path(args)} --requests {args.requests}")], None


def run_batch(args: argparse.Namespace) -> tuple[list[Any], int | None]:
    """A table of questions routed in one statement against one at a time, per path."""
    from dbrouter.eval.batch import batch_report
    from dbrouter.eval.batch import run_batch as batch

    results = batch(warehouse_path(args), args.questions, args.k)
    return [batch_report(results, f"dbrouter eval batch --warehouse {warehouse_path(args)} --questions "
                                  f"{args.questions} --k {args.k}")], None


def _batch_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--warehouse", help=f"a built KB with example questions (default $DBROUTER_WAREHOUSE or "
                    f"{DEFAULT_WAREHOUSE})")
    sp.add_argument("--questions", type=int, default=1000, help="example questions routed (default 1000)")
    sp.add_argument("--k", type=int, default=3, help="candidates per question (default 3)")


def _mcp_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--warehouse", help=f"a built KB with examples (default $DBROUTER_WAREHOUSE or {DEFAULT_WAREHOUSE})")
    sp.add_argument("--requests", type=int, default=100, help="calls per tool (default 100)")


def serve_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--warehouse", help=f"a built KB with example questions (default $DBROUTER_WAREHOUSE or "
                    f"{DEFAULT_WAREHOUSE})")
    sp.add_argument("--requests", type=int, default=200, help="requests per level (default 200)")
    sp.add_argument("--clients", default="1,4,16",
                    help="concurrency levels, each run in turn against one server (default 1,4,16; at most 64)")
    sp.add_argument("--hostile", action="store_true",
                    help="run each level again with one more client sending heavy statements throughout")
    sp.add_argument("--connect-each", action="store_true",
                    help="open a connection per request, as psql -c or a BI tool without a connection pool "
                         "(default: each client keeps one connection)")


def run_profile(args: argparse.Namespace) -> tuple[list[Any], int | None]:
    """Where a routed question's time goes, by part of the routing query (DuckDB's profiler)."""
    from dbrouter.eval.profile import profile_report, profile_route
    from dbrouter.kb.connect import connect

    warehouse = warehouse_path(args)
    label = args.label or "/".join(warehouse.parts[-2:])
    if args.n < 1:
        raise DbrouterError(f"eval profile: --n must be at least 1, not {args.n}")
    if args.questions_file:
        try:
            text = Path(args.questions_file).read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise DbrouterError(f"eval profile: cannot read --questions-file {args.questions_file}: {exc}") from exc
        questions = [line.strip() for line in text.splitlines() if line.strip()]
        source = f" --questions-file {args.questions_file}"
    elif args.benchmark:
        questions = [q.question for q in _bench(args).test]
        source = f" --benchmark {args.benchmark}"
    else:
        questions, source = [], ""
    con = connect(warehouse, read_only=True, embedder=args.embedder)
    try:
        if not questions:
            questions = [r[0] for r in con.execute("select distinct question from kb_examples order by question").fetchall()]
        if not questions:
            raise DbrouterError(f"{warehouse} has no example questions: give --benchmark DIR or --questions-file FILE")
        questions = list(dict.fromkeys(questions))  # a question asked twice would be answered from kept answers
        random.Random(0).shuffle(questions)
        result = profile_route(con, label, questions[:args.n + 3], args.path, warm=3)
    except ValueError as exc:
        raise DbrouterError(str(exc)) from exc
    finally:
        con.close()
    command = (f"dbrouter eval profile --warehouse {warehouse}{source} --path {args.path} --n {args.n}"
               + (f" --label {shlex.quote(args.label)}" if args.label else ""))
    return [profile_report(result, command)], None


def _profile_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--warehouse", help=f"a built KB (default $DBROUTER_WAREHOUSE or {DEFAULT_WAREHOUSE}); opened read-only")
    sp.add_argument("--benchmark", help="profile the benchmark's test questions (default: the KB's example questions)")
    sp.add_argument("--questions-file", help="profile these questions, one per line")
    sp.add_argument("--path", default="held", choices=["held", "sql"],
                    help="held: dbrouter.route()'s held routing query (default); sql: the pure-SQL path, planned")
    sp.add_argument("--n", type=int, default=20, help="questions profiled after 3 warm-up ones (default 20)")
    sp.add_argument("--label", help="how the report names the KB (default: the warehouse path's last two parts)")


def run_firstrun(args: argparse.Namespace) -> tuple[list[Any], int | None]:
    """Distillation, first build, cold `dbrouter route`, warm route_query, in fresh processes."""
    from dbrouter.eval.firstrun import firstrun_report
    from dbrouter.eval.firstrun import run_firstrun as firstrun
    from python_udfs.embeddings import resolve_embedder_name

    embedder = resolve_embedder_name(args.embedder)
    result = firstrun(Path(args.sources), Path(args.workdir), embedder, args.runs, args.distill)
    command = (f"dbrouter eval firstrun --sources {args.sources} --runs {args.runs}"
               f"{' --distill' if args.distill else ''}{f' --embedder {args.embedder}' if args.embedder else ''}")
    return [firstrun_report(result, command)], None


def firstrun_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--sources", default="demo/sources.yml", help="sources file to build (default demo/sources.yml)")
    sp.add_argument("--workdir", default=".dbrouter/eval/firstrun", help="scratch directory (warehouse, model cache)")
    sp.add_argument("--runs", type=int, default=5, help="cold `dbrouter route` processes (default 5)")
    sp.add_argument("--distill", action="store_true", help="also time the one-time distillation (empty model cache)")


def run_wide(args: argparse.Namespace) -> tuple[list[Any], int | None]:
    """Routing over the benchmark's databases merged by domain into wide ones, beside two baselines."""
    from dbrouter.eval.wide import eval_wide, wide_report

    bench = _bench(args)
    m = eval_wide(bench, Path(args.workdir) / f"{bench.name}-wide", args.embedder, args.setting, args.group_size,
                  limit=args.limit)
    command = (f"dbrouter eval wide --benchmark {bench_arg(args)} --setting {args.setting} "
               f"--group-size {args.group_size}")
    return [wide_report(m, command)], args.limit


def _wide_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--setting", default="schema-only", choices=["in-domain", "schema-only", "cross-domain"],
                    help="which train questions become examples of the merged databases (default schema-only: none)")
    sp.add_argument("--group-size", type=int, default=6,
                    help="mean number of the benchmark's databases merged into one wide database (default 6)")


def _scale_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--databases", type=int, default=10_000, help="synthetic databases (default 10000)")
    sp.add_argument("--wide-columns", type=int, default=0,
                    help="also one wide database of at least this many columns, date shards included (default none)")


def _sql_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--candidates", type=int, default=5, help="SQL candidates per question (default 5)")
    sp.add_argument("--repair-turns", type=int, default=3, help="repair turns per candidate (default 3)")


EVALS: tuple[EvalCommand, ...] = (
    EvalCommand("route", "routing accuracy and latency", run_route, route_options, limit=True),
    EvalCommand("build", "KB build, no-op rebuild, one-database change", run_build),
    EvalCommand("scale", "synthetic repository of many databases: build, latency, memory", run_scale, _scale_options),
    EvalCommand("first-stage", "two-stage shortlist: stage 1's recall and the one-stage candidates it keeps",
                run_first_stage, limit=True),
    EvalCommand("wide", "wide databases (the benchmark merged by domain, date shards): dbrouter vs BM25 and "
                "mean-table-vector baselines", run_wide, _wide_options, limit=True),
    EvalCommand("signals", "where routing loses the gold database: each signal's and stage's ranking, schema only, "
                "BM25 and mean-table baselines beside", run_signals, _signals_options, limit=True),
    EvalCommand("statements", "statement retrieval: SbR vs cosine vs BM25", run_statements, limit=True),
    EvalCommand("examples", "example cascade: per-stage firing and precision", run_examples, limit=True),
    EvalCommand("link", "schema linking strict recall (SRR), gold database given", run_link, limit=True),
    EvalCommand("abstain", "abstention: out-of-repository questions refused, in-repository R@1 it costs",
                run_abstain, limit=True),
    EvalCommand("few", "1, 3 and 5 examples per database against none: R@1, abstention, the stored questions' "
                "paraphrases", run_few, _few_options, limit=True),
    EvalCommand("sql", "execution accuracy (EX) of generated SQL; needs an LLM", run_sql, _sql_options, limit=True),
    EvalCommand("serve", "load test of `dbrouter serve`: route_query throughput and p50/p95 latency", run_serve,
                serve_options, benchmark=False),
    EvalCommand("batch", "a table of questions routed in one SQL statement vs one at a time: throughput, "
                "identical rankings", run_batch, _batch_options, benchmark=False),
    EvalCommand("mcp", "round trips of `dbrouter mcp`'s route, link and run_sql through the MCP SDK's stdio client",
                run_mcp, _mcp_options, benchmark=False),
    EvalCommand("profile", "where a routed question's time goes: DuckDB's profiler, operator time by part of the "
                "routing query", run_profile, _profile_options, benchmark=False),
    EvalCommand("firstrun", "what a new user waits for: distillation, first build, cold and warm routing, in fresh "
                "processes", run_firstrun, firstrun_options, benchmark=False),
)
"""Every evaluation, in the order `dbrouter eval --help` lists them."""


def cmd_eval(args: argparse.Namespace) -> int:
    """Run the chosen evaluation, then print and record each of its reports."""
    from dbrouter.eval.publish import publish

    reports, limit = args.eval.run(args)
    for report in reports:
        publish(report, args.json, Path(args.write) if args.write else None, limit)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """``eval <name>`` for every row of :data:`EVALS`, with the options they share."""
    ev = sub.add_parser("eval", help="benchmarks (results go to BENCHMARKS.md)")
    evsub = ev.add_subparsers(dest="eval_command", required=True)
    for command in EVALS:
        sp = evsub.add_parser(command.name, help=command.help)
        if command.benchmark:
            sp.add_argument("--benchmark", help="benchmark directory (or $DBROUTER_BENCHMARK)")
            sp.add_argument("--workdir", default=".dbrouter/eval", help="where evaluation warehouses live")
        add_embedder(sp)
        sp.add_argument("--write", default="BENCHMARKS.md", help="markdown file to record results in ('' to skip)")
        sp.add_argument("--json", action="store_true", help="print one JSON line per report")
        if command.limit:
            sp.add_argument("--limit", type=int, help="only the first N test questions (smoke runs; not recorded)")
        command.options(sp)
        sp.set_defaults(func=cmd_eval, eval=command)
