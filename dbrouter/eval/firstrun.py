"""`dbrouter eval firstrun`: what a new user waits for, measured in fresh processes.

Steps, each timed on the wall clock:

1. the one-time distillation of the static phrase model (``--distill``: into an empty cache
   directory, so it really runs; otherwise the machine's cached model is used);
2. the first `dbrouter build` of the sources into an empty warehouse (ingest + dbt build with
   every document embedded);
3. a cold `dbrouter route` of one question (a new process each time: imports, model loads,
   routing), repeated ``runs`` times, on the wall clock and in CPU seconds (user + system of the
   process and its threads, from the operating system's accounting of the finished child);
4. warm `route_query` in one process (after one question), p50 / p95 over the given questions and
   the KB's own example questions, each asked once (asked again, a question is a kept answer).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from dbrouter.errors import DbrouterError
from dbrouter.eval.publish import Report

DEMO_QUESTIONS = ["How many singers do we have?", "Which courses does the history department offer?",
                  "List the products that cost more than 100 dollars", "Which orchestra has the most performances?",
                  "What is the average age of the conductors?", "Show the names of students with a transcript."]


@dataclass
class FirstRun:
    """Wall-clock seconds (and milliseconds for warm routing) of a first run."""

    embedder: str
    distill_s: float | None
    build_s: float
    route_cold_s: list[float]
    route_cold_median_s: float
    route_cold_cpu_s: list[float]
    route_cold_cpu_median_s: float
    warm_p50_ms: float
    warm_p95_ms: float
    questions: int


def _dbrouter(*args: str, env: dict[str, str]) -> tuple[float, float]:
    """Run the CLI in a new process; returns its wall time and CPU time (raises on failure)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "dbrouter.cli.main", *args], env=env, capture_output=True, text=True)
    took = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise DbrouterError(f"`dbrouter {' '.join(args)}` failed (exit {proc.returncode}): {proc.stderr[-800:]}")
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _distill(env: dict[str, str]) -> float:
    code = "from python_udfs.embeddings import get_phrase_embedder; get_phrase_embedder('minilm')"
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
    return time.monotonic() - started


def run_firstrun(sources: Path, workdir: Path, embedder: str, runs: int = 5, distill: bool = False,
                 questions: list[str] | None = None) -> FirstRun:
    """Measure a first run in fresh processes.

    Args:
        sources: the sources file to build.
        workdir: where the warehouse (and, with ``distill``, the empty model cache) go; the
            warehouse is deleted first.
        embedder: the embedder to build and route with.
        runs: how many cold `dbrouter route` processes.
        distill: also time the one-time distillation, into an empty cache under ``workdir``.
        questions: warm-routing questions, asked before the KB's own example questions (default: a few about
            the demo databases).

    Returns:
        A :class:`FirstRun`.
    """
    import dbrouter

    workdir.mkdir(parents=True, exist_ok=True)
    warehouse = workdir / "firstrun.duckdb"
    warehouse.unlink(missing_ok=True)
    env = {**os.environ, "DBROUTER_EMBEDDER": embedder, "HF_HUB_OFFLINE": "1"}
    distill_s = None
    if distill:
        cache = workdir / "model-cache"
        if cache.exists():
            import shutil

            shutil.rmtree(cache)
        env["DBROUTER_CACHE_DIR"] = str(cache)
        distill_s = _distill(env)
    build_s, _ = _dbrouter("build", "--sources", str(sources), "--warehouse", str(warehouse), env=env)
    qs = questions or DEMO_QUESTIONS
    timed = [_dbrouter("route", "--warehouse", str(warehouse), "--no-llm", qs[i % len(qs)], env=env)
             for i in range(runs)]
    cold, cpu = [wall for wall, _ in timed], [c for _, c in timed]
    con = dbrouter.connect(warehouse, embedder=embedder)
    try:
        # each question once: asked again, a question is answered from the connection's kept answers
        # (adr-0038); the KB's own example questions after the given ones
        examples = [r[0] for r in con.execute("select distinct question from kb_examples where question is not null "
                                              "order by question").fetchall()]
        warm = list(dict.fromkeys([*qs, *examples]))
        con.execute("select route_query(?)", [warm[0]]).fetchall()
        times = []
        for q in warm[1:]:
            started = time.perf_counter()
            con.execute("select route_query(?)", [q]).fetchall()
            times.append((time.perf_counter() - started) * 1000)
    finally:
        con.close()
    if not times:
        raise DbrouterError("eval firstrun: warm routing needs at least two distinct questions")
    times.sort()
    return FirstRun(embedder, distill_s, build_s, [round(c, 2) for c in cold], statistics.median(cold),
                    [round(c, 2) for c in cpu], statistics.median(cpu),
                    statistics.median(times), times[max(0, int(round(0.95 * len(times))) - 1)], len(times))


def firstrun_report(result: FirstRun, command: str) -> Report:
    """The BENCHMARKS.md block of a first-run measurement."""
    distill = f"{result.distill_s:.1f} s" if result.distill_s is not None else "not measured (cached model)"
    md = (
        f"#### eval firstrun ({result.embedder})\n\n"
        "| step (fresh processes, wall clock) | time |\n|---|---|\n"
        f"| one-time distillation of the static phrase model | {distill} |\n"
        f"| first `dbrouter build` of the demo (empty warehouse, every document embedded) | {result.build_s:.1f} s |\n"
        f"| cold `dbrouter route` of one question (median of {len(result.route_cold_s)}: "
        f"{', '.join(f'{c:.2f}' for c in result.route_cold_s)}) | {result.route_cold_median_s:.2f} s |\n"
        f"| the same, CPU seconds (user + system; median of {len(result.route_cold_cpu_s)}: "
        f"{', '.join(f'{c:.2f}' for c in result.route_cold_cpu_s)}) | {result.route_cold_cpu_median_s:.2f} s |\n"
        f"| warm `route_query` in one process, p50 / p95 over {result.questions} distinct questions, each once | "
        f"{result.warm_p50_ms:.1f} / {result.warm_p95_ms:.1f} ms |\n\n")
    return Report(key=f"eval firstrun {result.embedder}", command=command, data=asdict(result), markdown=md)
