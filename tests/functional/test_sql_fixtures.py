"""The SQL fixture tests of tests/integration_tests (seed -> package macro -> expected CSV, as in
dbt-utils' integration_tests), run through a real dbt build with the profile plugin."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1] / "integration_tests"
DBT = str(Path(sys.executable).parent / "dbt")

pytestmark = pytest.mark.slow


def _dbt(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([DBT, *args], cwd=PROJECT, env=env, capture_output=True, text=True)


def test_macro_fixtures_match_expected_csvs(tmp_path):
    env = {**os.environ, "DBT_PROFILES_DIR": str(PROJECT), "DBROUTER_IT_WAREHOUSE": str(tmp_path / "it.duckdb"),
           "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DBT_LOG_PATH": str(tmp_path / "logs"),
           "DBT_TARGET_PATH": str(tmp_path / "target"), "DBROUTER_IT_PACKAGES": str(tmp_path / "dbt_packages")}
    deps = _dbt("deps", env=env)
    assert deps.returncode == 0, deps.stdout + deps.stderr
    build = _dbt("build", env=env)
    out = build.stdout + build.stderr
    assert build.returncode == 0, out
    # every fixture model was built and compared: one equals_seed test per model passed
    models = re.findall(r"(?m)^  - name: (it_\w+)$", (PROJECT / "models" / "_it__models.yml").read_text())
    assert len(models) == len(list((PROJECT / "models").glob("it_*.sql"))) >= 27
    assert len(re.findall(r"PASS equals_seed_it_", out)) == len(models), out


def test_every_dispatched_expression_macro_has_a_fixture():
    """One fixture model per cross-database expression (macros/dialect/, as dbt-utils has one per
    macro): a new dispatched macro there without a fixture fails here. The DDL and setting macros,
    which produce statements or read the project's configuration, are listed as exempt."""
    exempt = {"cte_materialized", "date_shard_base", "route_paths", "entry_point_name", "create_entry_point",
              "call_table_entry_point", "route_path_check", "runtime_embedder", "sql_type", "vector_type"}
    macros_dir = PROJECT.parents[1] / "macros" / "dialect"
    dispatched = {m for f in macros_dir.glob("*.sql")
                  for m in re.findall(r"adapter\.dispatch\('(\w+)'", f.read_text())}
    fixtures = {p.stem[3:] for p in (PROJECT / "models").glob("it_*.sql")}
    covered = fixtures | {m for f in fixtures for m in dispatched if f"dbrouter.{m}(" in
                          (PROJECT / "models" / f"it_{f}.sql").read_text()}
    assert sorted(dispatched - covered - exempt) == []
