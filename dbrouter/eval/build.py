"""`dbrouter eval build`: wall time of a full KB build, a no-op rebuild and a rebuild after one
database's schema changed, with the documents each embedded, plus warm `route_query` latency."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from dbrouter.eval.benchmark import Benchmark
from dbrouter.eval.kb import build_kb, latency
from dbrouter.eval.publish import Report
from dbrouter.kb.connect import connect


def change_one_database(src: Path, dest: Path) -> str:
    """Copy databases.jsonl to ``dest`` with its first database changed.

    Args:
        src: the benchmark's databases.jsonl.
        dest: where to write the changed copy.

    Returns:
        The changed db_id (a column added to its first table, its second table renamed).
    """
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


def run_build_benchmark(bench: Benchmark, workdir: Path, embedder: str | None) -> dict:
    """Build three times (full, no-op, after a change) and time ``route_query``.

    Args:
        bench: the benchmark (all train questions become examples).
        workdir: a fresh folder for the warehouse (emptied first).
        embedder: embedder name.

    Returns:
        The measurements (``full_build_s``, ``full_build_embedded``, ``noop_...``, ``change_...``,
        ``changed_db``, ``documents`` per kind, ``route_p50_ms``, ``route_p95_ms``).
    """
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    wh = workdir / "kb.duckdb"
    full = build_kb(bench.databases_file, bench.train, wh, embedder)
    noop = build_kb(bench.databases_file, bench.train, wh, embedder)
    changed = workdir / "databases_changed.jsonl"
    db_id = change_one_database(bench.databases_file, changed)
    change = build_kb(changed, bench.train, wh, embedder)
    con = connect(wh, embedder=embedder)
    try:
        counts = dict(con.execute("select doc_kind, count(*) from kb_documents group by 1").fetchall())
        p50, p95 = latency(con, [q.question for q in bench.test])
    finally:
        con.close()
    return {"benchmark": bench.name, "databases": len(bench.db_ids), "documents": counts,
            "full_build_s": round(full.seconds, 1), "full_build_embedded": full.embedded,
            "noop_build_s": round(noop.seconds, 1), "noop_build_embedded": noop.embedded,
            "change_build_s": round(change.seconds, 1), "change_build_embedded": change.embedded, "changed_db": db_id,
            "route_p50_ms": round(p50, 1), "route_p95_ms": round(p95, 1)}


def build_report(r: dict, command: str) -> Report:
    """The measurements as a :class:`Report` (block ``eval build <benchmark>``; prints JSON either way).

    Args:
        r: :func:`run_build_benchmark`'s result.
        command: the command line to record.

    Returns:
        The report.
    """
    markdown = (
        f"#### eval build: {r['benchmark']}\n\n"
        f"{r['databases']} databases; documents: {r['documents']}.\n\n"
        f"| build | wall s (ingest + dbt build) | documents embedded |\n|---|---|---|\n"
        f"| full (empty warehouse) | {r['full_build_s']} | {r['full_build_embedded']} |\n"
        f"| again, nothing changed | {r['noop_build_s']} | {r['noop_build_embedded']} |\n"
        f"| after changing `{r['changed_db']}` (1 column added, 1 table renamed) | {r['change_build_s']} | "
        f"{r['change_build_embedded']} |\n\n"
        f"`route_query` warm latency over 200 test questions: p50 {r['route_p50_ms']} ms, "
        f"p95 {r['route_p95_ms']} ms.\n\n")
    return Report(key=f"eval build {r['benchmark']}", command=command, data=r, markdown=markdown,
                  text=json.dumps(r))
