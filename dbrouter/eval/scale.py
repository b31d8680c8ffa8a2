"""`dbrouter eval scale`: a synthetic repository of many databases, built and routed.

The repository is generated from real schemas (any benchmark directories' databases.jsonl):
synthetic database *i* merges two real databases picked by a seeded generator, with every
table renamed (a suffix from a fixed word list plus the index, e.g. ``singer_archive_0412``) and
its foreign keys kept; so the repository has the real schemas' vocabulary and overlap, ~2x
their columns per database, and no two tables share a name across databases. The questions
routed are real questions of the source benchmarks (their gold database is not in the
synthetic repository: this measures speed and memory, not accuracy).
"""

from __future__ import annotations

import json
import random
import resource
import statistics
import time
from pathlib import Path

from dbrouter.console import err
from dbrouter.eval.kb import Log, build_kb, held_latency, latency, plain_latency
from dbrouter.eval.publish import Report
from dbrouter.kb.connect import connect
from python_udfs.embeddings import resolve_embedder_name

SUFFIXES = ("archive", "legacy", "eu", "us", "apac", "staging", "v2", "mirror", "backup", "ops", "finance",
            "crm", "erp", "hr", "sales", "research", "partner", "regional", "central", "reporting")


def load_schemas(files: list[Path]) -> list[dict]:
    """All databases of the given databases.jsonl files.

    Args:
        files: databases.jsonl paths.

    Returns:
        Their rows, in order.

    Raises:
        ValueError: the files hold no database.
    """
    out = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            out += [json.loads(line) for line in fh if line.strip()]
    if not out:
        raise ValueError(f"no databases in {', '.join(map(str, files))}")
    return out


def synthesize(schemas: list[dict], n: int, seed: int = 0) -> list[dict]:
    """``n`` synthetic databases, each the union of two renamed real schemas.

    Args:
        schemas: real databases (databases.jsonl rows).
        n: how many synthetic databases.
        seed: generator seed.

    Returns:
        databases.jsonl rows.
    """
    rng = random.Random(seed)
    out = []
    for i in range(n):
        tables, fks = [], []
        for part in rng.sample(schemas, 2):
            suffix = f"{rng.choice(SUFFIXES)}_{i:05d}"
            rename = {t["name"]: f"{t['name']}_{suffix}" for t in part["tables"]}
            for t in part["tables"]:
                tables.append({**t, "name": rename[t["name"]],
                               "label": f"{t.get('label') or t['name']} {suffix.split('_')[0]}"})
            for fk in part.get("foreign_keys", []):
                if fk["table"] in rename and fk["ref_table"] in rename:
                    fks.append({**fk, "table": rename[fk["table"]], "ref_table": rename[fk["ref_table"]]})
        names = [t["name"] for t in tables]
        if len(set(names)) != len(names):  # the same real schema drawn twice: keep one copy
            first: dict[str, dict] = {}
            for t in tables:
                first.setdefault(t["name"], t)
            tables = list(first.values())
        out.append({"db_id": f"synthetic_{i:05d}", "tables": tables, "foreign_keys": fks})
    return out


def synthesize_wide(schemas: list[dict], n_columns: int, shards: int = 30, seed: int = 1) -> dict:
    """One wide database of at least ``n_columns`` columns, the shape of a warehouse dataset.

    Real schemas are merged into it, each copy's tables renamed with a copy suffix, and every fifth
    table is also kept as ``shards`` daily date shards with identical columns
    (``<table>_20240101`` ...), which the KB recognises as one logical table. The columns counted
    are the physical ones, shards included.

    Args:
        schemas: real databases (databases.jsonl rows).
        n_columns: the least number of columns.
        shards: date shards of every fifth table.
        seed: generator seed.

    Returns:
        A databases.jsonl row, ``db_id`` ``synthetic_wide``.
    """
    rng = random.Random(seed)
    tables: list[dict] = []
    fks: list[dict] = []
    count, copy = 0, 0
    while count < n_columns:
        part = rng.choice(schemas)
        suffix = f"w{copy:04d}"
        rename = {t["name"]: f"{t['name']}_{suffix}" for t in part["tables"]}
        for i, t in enumerate(part["tables"]):
            names = [rename[t["name"]]]
            if (len(tables) + i) % 5 == 0:
                names += [f"{rename[t['name']]}_202401{d:02d}" for d in range(1, shards + 1)]
            for name in names:
                tables.append({**t, "name": name})
                count += len(t["columns"])
        for fk in part.get("foreign_keys", []):
            if fk["table"] in rename and fk["ref_table"] in rename:
                fks.append({**fk, "table": rename[fk["table"]], "ref_table": rename[fk["ref_table"]]})
        copy += 1
    return {"db_id": "synthetic_wide", "tables": tables, "foreign_keys": fks}


def write_repository(rows: list[dict], path: Path) -> dict:
    """Write synthetic databases as a databases.jsonl file.

    Args:
        rows: :func:`synthesize`'s output.
        path: the file to write (parents created).

    Returns:
        Its size: ``databases``, ``tables``, ``columns``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    return {"databases": len(rows), "tables": sum(len(r["tables"]) for r in rows),
            "columns": sum(len(t["columns"]) for r in rows for t in r["tables"])}


def _rss_mib(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


def run_scale(sources: list[Path], n: int, workdir: Path, embedder: str | None, questions: list[str],
              log: Log = err, wide_columns: int = 0) -> dict:
    """Generate, build and route the synthetic repository.

    Args:
        sources: benchmark directories whose databases.jsonl seed the generator.
        n: number of synthetic databases.
        workdir: where the repository file and warehouse go.
        embedder: embedder for the build and routing.
        questions: questions to route for latency.
        log: progress output.
        wide_columns: also one database of at least this many columns (:func:`synthesize_wide`);
            0 for none.

    Returns:
        The measurements (sizes, ``build_s``, ``embedded``, memory, ``p50_ms``, ``p95_ms`` of
        the plain ``route_query`` (held; ``planned_p50_ms``, ``planned_p95_ms`` of ``route_query_udf``,
        ``plain_same`` of ``plain_compared`` equal), ``held_p50_ms``, ``held_p95_ms`` of ``dbrouter.route()`` with ``held_same`` of
        ``held_compared`` held answers equal to the planned ones, ...).
    """
    repo = workdir / "databases.jsonl"
    schemas = load_schemas([s / "databases.jsonl" for s in sources])
    rows = synthesize(schemas, n)
    wide = [synthesize_wide(schemas, wide_columns)] if wide_columns else []
    sizes = write_repository(rows + wide, repo)
    sizes["wide_columns"] = sum(len(t["columns"]) for r in wide for t in r["tables"])
    log(f"synthetic repository: {sizes['databases']} databases, {sizes['tables']} tables, {sizes['columns']} columns")
    warehouse = workdir / "kb.duckdb"
    if warehouse.exists():
        warehouse.unlink()
    build = build_kb(repo, [], warehouse, embedder, log)
    dbt_rss = _rss_mib(resource.RUSAGE_CHILDREN)
    log("no-op rebuild (nothing changed)")
    noop = build_kb(repo, [], warehouse, embedder, log)
    con = connect(warehouse, embedder=embedder)
    try:
        plain = plain_latency(con, questions)
        held_p50, held_p95, held_same, held_n = held_latency(con, questions)
        sql_p50, sql_p95 = latency(con, questions, function="route_query_sql")
        shortlist_times = []
        for q in questions[:50]:
            t = time.perf_counter()
            con.execute("select * from route_shortlist(?, 10)", [q]).fetchall()
            shortlist_times.append((time.perf_counter() - t) * 1000)
        n_docs = con.execute("select count(*) from kb_document_embeddings").fetchall()[0][0]
    finally:
        con.close()
    return {**sizes, "embedder": resolve_embedder_name(embedder), "documents": n_docs,
            "build_s": round(build.seconds, 1), "embedded": build.embedded,
            "warehouse_mib": round(warehouse.stat().st_size / 2**20, 1),
            "build_peak_rss_mib": round(dbt_rss, 1), "route_peak_rss_mib": round(_rss_mib(resource.RUSAGE_SELF), 1),
            "noop_rebuild_s": round(noop.seconds, 1), "p50_ms": round(plain.p50_ms, 1), "p95_ms": round(plain.p95_ms, 1),
            "planned_p50_ms": round(plain.planned_p50_ms, 1), "planned_p95_ms": round(plain.planned_p95_ms, 1),
            "plain_same": plain.same, "plain_compared": plain.compared,
            "held_p50_ms": round(held_p50, 1), "held_p95_ms": round(held_p95, 1), "held_same": held_same,
            "held_compared": held_n, "sql_p50_ms": round(sql_p50, 1), "sql_p95_ms": round(sql_p95, 1),
            "shortlist_p50_ms": round(statistics.median(shortlist_times), 1), "n_questions": len(questions)}


PROJECTED = 100_000
"""The repository size :func:`projection` extrapolates to."""


def projection(r: dict) -> str:
    """What :data:`PROJECTED` databases would cost, linear in the measured per-database costs.

    Build time, warehouse size and the routing process's memory (which holds the vector index)
    grow with the documents; the projection assumes the measured repository's mix of tables and
    columns per database. Latency is not projected: it is measured.

    Args:
        r: :func:`run_scale`'s result.

    Returns:
        A markdown paragraph.
    """
    f = PROJECTED / r["databases"]
    wide = (f"The repository includes one database of {r['wide_columns']:,} columns (date shards included). "
            if r.get("wide_columns") else "")
    return wide + (f"Projected to {PROJECTED:,} databases (x{f:g}, linear in the per-database costs measured here): "
            f"build {r['build_s'] * f / 60:.0f} min, warehouse {r['warehouse_mib'] * f / 1024:.0f} GiB, "
            f"routing process {r['route_peak_rss_mib'] * f / 1024:.1f} GiB, {r['documents'] * f:,.0f} documents.\n\n")


def _held(r: dict) -> str:
    """The held column: p50 / p95 and how many held answers equal the planned ones (or why none)."""
    if "held_p50_ms" not in r:
        return "not measured"
    if not r["held_compared"]:
        return f"{r['held_p50_ms']} / {r['held_p95_ms']} (not held: above MAX_HELD_ROWS, planned per call)"
    return f"{r['held_p50_ms']} / {r['held_p95_ms']} ({r['held_same']}/{r['held_compared']} answers as planned)"


def _plain(r: dict) -> str:
    """The route_query column: the plain name (held from its second question) and, where measured, the
    planned ``route_query_udf`` beside it with how many answers agree."""
    if "planned_p50_ms" not in r:  # a result recorded before the plain name was held
        return f"{r['p50_ms']} / {r['p95_ms']}"
    return (f"{r['p50_ms']} / {r['p95_ms']} (planned `route_query_udf`: {r['planned_p50_ms']} / "
            f"{r['planned_p95_ms']}; {r['plain_same']}/{r['plain_compared']} answers as planned)")


def scale_report(r: dict, command: str) -> Report:
    """The measurements as a :class:`Report` (block ``eval scale <databases>``; prints JSON either way).

    Args:
        r: :func:`run_scale`'s result.
        command: the command line to record.

    Returns:
        The report.
    """
    markdown = (
        f"#### eval scale: {r['databases']:,} synthetic databases\n\n"
        f"| databases | tables | columns | documents | embedder | build s | no-op rebuild s | build peak RSS MiB | "
        f"warehouse MiB | `select route_query(?)` p50 / p95 ms (UDF path, `dbrouter.connect()`) | dbrouter.route() p50 / p95 ms (held) | pure SQL p50 / p95 ms | shortlist only p50 ms | "
        f"routing process RSS MiB |\n"
        f"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
        f"| {r['databases']:,} | {r['tables']:,} | {r['columns']:,} | {r['documents']:,} | {r['embedder']} | "
        f"{r['build_s']} | {r['noop_rebuild_s']} | {r['build_peak_rss_mib']} | {r['warehouse_mib']} | "
        f"{_plain(r)} | {_held(r)} | {r['sql_p50_ms']} / {r['sql_p95_ms']} | "
        f"{r['shortlist_p50_ms']} | {r['route_peak_rss_mib']} |\n\n"
        + projection(r))
    return Report(key=f"eval scale {r['databases']}" + (" wide" if r.get("wide_columns") else ""), command=command, data=r, markdown=markdown,
                  note=f"{r['n_questions']} questions routed", text=json.dumps(r))
