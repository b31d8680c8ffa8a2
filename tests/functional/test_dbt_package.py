"""dbrouter as a package in somebody else's dbt project, end to end from a separate directory, as
a new user tries it: `packages.yml` with `local:`, `dbt deps`, their own DuckDB profile, a model of
their own named `examples`, a model calling `route_query`, and their own hook calling a dbrouter
macro."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import dbrouter
from tests.conftest import ROOT, copy_demo, run_cli

DBT = str(Path(sys.executable).parent / "dbt")

pytestmark = pytest.mark.slow

PROJECT_YML = """name: acme
version: "1.0.0"
config-version: 2
profile: acme
models:
  acme:
    +materialized: table
on-run-end:
  - "{{ dbrouter.create_route_functions() }}"
"""

PROFILES_YML = """acme:
  target: dev
  outputs:
    dev:
      type: duckdb
      path: "{path}"
      threads: 1
      plugins:
        - module: python_udfs.plugin
          config: {{embedder: hash}}
"""

QUESTIONS = ["How many singers do we have?", "Which courses does the history department offer?",
             "Which orchestra has the most performances?"]


def _project(base: Path) -> tuple[Path, Path]:
    project, warehouse = base / "acme", base / "acme.duckdb"
    (project / "models").mkdir(parents=True)
    (project / "seeds").mkdir()
    (project / "dbt_project.yml").write_text(PROJECT_YML)
    (project / "packages.yml").write_text(f"packages:\n  - local: {ROOT}\n")
    (project / "profiles.yml").write_text(PROFILES_YML.format(path=warehouse))
    (project / "seeds" / "questions.csv").write_text("question\n" + "\n".join(QUESTIONS) + "\n")
    (project / "models" / "examples.sql").write_text("select 1 as id, 'our own examples model' as note\n")
    (project / "models" / "routed.sql").write_text(
        "-- depends_on: {{ ref('dbrouter', 'kb_sql_functions') }}\n"
        "select question, route_query(question) as db_id from {{ ref('questions') }}\n")
    return project, warehouse


def _dbt(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DBT_PROFILES_DIR": str(project), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
           "DBROUTER_EMBEDDER": "hash"}
    env.pop("DBROUTER_PROJECT_DIR", None)
    return subprocess.run([DBT, *args], cwd=project, env=env, capture_output=True, text=True)


def test_package_in_a_consuming_project(tmp_path):
    project, warehouse = _project(tmp_path)
    deps = _dbt(project, "deps")
    assert deps.returncode == 0, deps.stdout + deps.stderr

    # before any ingest: one error that says what to run, not 13 "schema does not exist"
    first = _dbt(project, "build")
    assert first.returncode != 0
    assert "raw snapshot of your source databases is missing" in first.stdout
    assert f"dbrouter ingest --sources <your sources.yml> --warehouse {warehouse}" in first.stdout
    assert "does not exist" not in first.stdout

    # the documented pre-step, with a sources file of their own (no example or statement files)
    sources = copy_demo(tmp_path / "src")
    text = sources.read_text()
    sources.write_text(text[:text.index("examples:")])
    run_cli("ingest", "--sources", str(sources), "--warehouse", str(warehouse))
    build = _dbt(project, "build")
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-2000:]

    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        # route_query answered inside their model on this very first build
        routed = dict(con.execute("select question, db_id from routed").fetchall())
        schemas = dict(con.execute("select table_schema, list(table_name order by table_name) "
                                   "from information_schema.tables group by 1").fetchall())
        ours = con.execute("select * from main.examples").fetchall()
        kb_examples = con.execute("select count(*) from main_dbrouter.kb_examples").fetchone()[0]
        statements = con.execute("select count(*) from main_dbrouter.kb_domain_statements").fetchone()[0]
        functions = {r[0] for r in con.execute(
            "select function_name from duckdb_functions() where schema_name = 'main' and function_type like '%macro'").fetchall()}
    finally:
        con.close()
    assert set(routed) == set(QUESTIONS) and all(routed.values()), routed
    assert routed["Which orchestra has the most performances?"] == "orchestra"
    # the KB lives in its own schema; their schema holds only their own relations
    assert schemas["main"] == ["examples", "questions", "routed"]
    assert {"kb_columns", "kb_databases", "kb_sql_functions"} <= set(schemas["main_dbrouter"])
    assert ours == [(1, "our own examples model")]
    # no demo data from the package: no examples, no statements they did not give
    assert kb_examples == 0 and statements == 0
    assert {"route_query", "route_query_json", "retrieve_examples"} <= functions
    # the CLI reads a KB built by the package too (its tables in main_dbrouter); before: "table missing, rebuild"
    proc = run_cli("route", "--warehouse", str(warehouse), "--no-llm", "Which orchestra has the most performances?")
    assert "1. orchestra" in proc.stdout, proc.stdout + proc.stderr
    # and dbrouter.connect(): its plain route_query, planned (a KB outside main is not held)
    con = dbrouter.connect(warehouse, embedder="hash")
    try:
        for _ in range(2):
            got = con.execute("select route_query(?)", ["Which orchestra has the most performances?"]).fetchall()
            assert got == [("orchestra",)]
        assert con.execute(
            "select macro_definition from duckdb_functions() where function_name = 'route_query' "
            "and database_name = 'temp'").fetchall()[0][0] == "route_query_udf(question)"
    finally:
        con.close()
