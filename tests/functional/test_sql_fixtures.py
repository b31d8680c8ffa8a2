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
    # every fixture model was built and compared: three equals_seed tests passed
    assert len(re.findall(r"PASS equals_seed_it_", out)) == 3, out
