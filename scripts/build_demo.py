"""Build the demo databases shipped in demo/ from the Spider-Route benchmark dumps.

Usage: python scripts/build_demo.py --benchmark ../shared/benchmarks/spider-route

Writes demo/databases/<db>.sqlite (from sql/<db>.sql), demo/databases/<db>.duckdb for the
DuckDB demo source, demo/schemas/<db>.json for the schema-only demo source, and a few
examples into demo/examples.jsonl (demo/statements.jsonl is written by hand). Run once by a maintainer; the outputs are committed.
Data: Spider (Yu et al., 2018), CC BY-SA 4.0.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SQLITE_DBS = ["singer", "concert_singer", "orchestra", "musical", "course_teach",
              "student_transcripts_tracking", "store_product", "department_store"]
DUCKDB_DBS = ["headphone_store"]
SCHEMA_ONLY_DBS = ["college_3"]
EXAMPLES_PER_DB = 3


def build_sqlite(dump: Path, out: Path) -> None:
    out.unlink(missing_ok=True)
    con = sqlite3.connect(out)
    con.executescript(dump.read_text(encoding="utf-8", errors="replace"))
    con.commit()
    con.close()


def build_duckdb(sqlite_file: Path, out: Path) -> None:
    import duckdb

    out.unlink(missing_ok=True)
    src = sqlite3.connect(sqlite_file)
    con = duckdb.connect(str(out))
    for (name,) in src.execute("select name from sqlite_master where type='table'"):
        cols = src.execute(f'pragma table_info("{name}")').fetchall()
        defs = ", ".join(f'"{c[1]}" {c[2] or "VARCHAR"}' for c in cols)
        pk = [c[1] for c in cols if c[5]]
        pk_sql = f', PRIMARY KEY ({", ".join(chr(34) + p + chr(34) for p in pk)})' if pk else ""
        con.execute(f'create table "{name}" ({defs}{pk_sql})')
        rows = src.execute(f'select * from "{name}"').fetchall()
        if rows:
            con.executemany(f'insert into "{name}" values ({", ".join("?" for _ in cols)})', rows)
        con.execute(f"comment on table \"{name}\" is 'Spider demo table {name} (CC BY-SA 4.0)'")
    con.close()
    src.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--benchmark", required=True, type=Path)
    args = ap.parse_args()
    dbdir, schemadir = ROOT / "demo/databases", ROOT / "demo/schemas"
    dbdir.mkdir(parents=True, exist_ok=True)
    schemadir.mkdir(parents=True, exist_ok=True)
    for db in SQLITE_DBS + DUCKDB_DBS:
        build_sqlite(args.benchmark / "sql" / f"{db}.sql", dbdir / f"{db}.sqlite")
    for db in DUCKDB_DBS:
        build_duckdb(dbdir / f"{db}.sqlite", dbdir / f"{db}.duckdb")
        (dbdir / f"{db}.sqlite").unlink()
    schemas = {json.loads(l)["db_id"]: json.loads(l) for l in (args.benchmark / "databases.jsonl").read_text().splitlines()}
    for db in SCHEMA_ONLY_DBS:
        (schemadir / f"{db}.json").write_text(json.dumps(schemas[db], indent=1))
    wanted = set(SQLITE_DBS + DUCKDB_DBS + SCHEMA_ONLY_DBS)
    per_db: dict[str, int] = {}
    with open(ROOT / "demo/examples.jsonl", "w", encoding="utf-8") as fh:
        for line in (args.benchmark / "train.jsonl").read_text().splitlines():
            ex = json.loads(line)
            if ex["db_id"] in wanted and per_db.get(ex["db_id"], 0) < EXAMPLES_PER_DB:
                per_db[ex["db_id"]] = per_db.get(ex["db_id"], 0) + 1
                fh.write(json.dumps({"db_id": ex["db_id"], "question": ex["question"],
                                     "sql": " ".join(ex["sql"].split())}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
