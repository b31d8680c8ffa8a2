"""`dbrouter eval build`: wall time of a full KB build, a no-op rebuild and a rebuild after one
database's schema changed, plus warm `route_query` latency, on a benchmark repository."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from dbrouter.eval.benchmark import Benchmark
from dbrouter.eval.route import build_kb, latency, machine, stderr, update_benchmarks_md
from dbrouter.warehouse import connect


def change_one_database(src: Path, dest: Path) -> str:
    """Copy databases.jsonl to ``dest`` with one database changed (a column added to its
    first table, its second table renamed). Returns the changed db_id."""
    lines = src.read_text().splitlines()
    obj = json.loads(lines[0])
    obj["tables"][0]["columns"].append({"name": "added_note", "label": "added note", "type": "text",
                                        "primary_key": False})
    if len(obj["tables"]) > 1:
        old = obj["tables"][1]["name"]
        obj["tables"][1]["name"] = old + "_renamed"
        for fk in obj.get("foreign_keys", []):
            fk["table"] = fk["table"] + "_renamed" if fk["table"] == old else fk["table"]
            fk["ref_table"] = fk["ref_table"] + "_renamed" if fk["ref_table"] == old else fk["ref_table"]
    lines[0] = json.dumps(obj)
    dest.write_text("\n".join(lines) + "\n")
    return obj["db_id"]


def run_build_benchmark(bench: Benchmark, workdir: Path, embedder: str | None, write: Path | None,
                        bench_arg: str) -> dict:
    """Measure builds and latency; optionally record them in BENCHMARKS.md.

    Args:
        bench: the benchmark (all train questions become examples).
        workdir: a fresh folder for the warehouse (emptied first).
        embedder: embedder name.
        write: BENCHMARKS.md path or None.
        bench_arg: how the benchmark was named on the command line (for the record).

    Returns:
        The measurements as a dict.
    """
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    wh = workdir / "kb.duckdb"
    full_s, full_n = build_kb(bench.databases_file, bench.train, wh, embedder)
    noop_s, noop_n = build_kb(bench.databases_file, bench.train, wh, embedder)
    changed = workdir / "databases_changed.jsonl"
    db_id = change_one_database(bench.databases_file, changed)
    change_s, change_n = build_kb(changed, bench.train, wh, embedder)
    con = connect(wh, embedder=embedder)
    try:
        counts = dict(con.execute("select doc_kind, count(*) from kb_documents group by 1").fetchall())
        p50, p95 = latency(con, [q.question for q in bench.test])
    finally:
        con.close()
    result = {"benchmark": bench.name, "databases": len(bench.db_ids), "documents": counts,
              "full_build_s": round(full_s, 1), "full_build_embedded": full_n,
              "noop_build_s": round(noop_s, 1), "noop_build_embedded": noop_n,
              "change_build_s": round(change_s, 1), "change_build_embedded": change_n, "changed_db": db_id,
              "route_p50_ms": round(p50, 1), "route_p95_ms": round(p95, 1)}
    if write:
        body = (f"#### eval build: {bench.name}\n\n"
                f"{len(bench.db_ids)} databases; documents: {counts}.\n\n"
                f"| build | wall s (ingest + dbt build) | documents embedded |\n|---|---|---|\n"
                f"| full (empty warehouse) | {result['full_build_s']} | {full_n} |\n"
                f"| again, nothing changed | {result['noop_build_s']} | {noop_n} |\n"
                f"| after changing `{db_id}` (1 column added, 1 table renamed) | {result['change_build_s']} | {change_n} |\n\n"
                f"`route_query` warm latency over 200 test questions: p50 {result['route_p50_ms']} ms, "
                f"p95 {result['route_p95_ms']} ms.\n\n"
                f"Command: `dbrouter eval build --benchmark {bench_arg}` - {time.strftime('%Y-%m-%d')}, {machine()}.\n")
        update_benchmarks_md(write, f"eval build {bench.name}", body)
    stderr(json.dumps(result))
    return result
