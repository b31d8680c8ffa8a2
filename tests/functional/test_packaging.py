"""dbrouter as a user gets it: a wheel installed outside the checkout builds and routes the demo KB.

The wheel carries the dbt project (setup.py copies it into ``dbrouter/dbt_project/``); the test
installs it into a fresh virtualenv (its dependencies come from the project's venv through a
``.pth`` path entry, so nothing is downloaded) and runs ``dbrouter build`` from a directory that
holds only the demo's sources, then ``dbrouter route``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, copy_demo

pytestmark = pytest.mark.slow


def _run(cmd: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``cmd`` outside any checkout path: no PYTHONPATH, no project dir from the environment."""
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DBROUTER_PROJECT_DIR")}
    proc = subprocess.run(cmd, cwd=str(cwd), capture_output=True, text=True, env={**clean, **(env or {})})
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def test_wheel_installed_outside_the_checkout_builds_and_routes_the_demo(tmp_path):
    src = tmp_path / "src"  # pip builds in the source tree: a copy keeps build/ out of the checkout
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv*", "build", "target", "logs", ".dbrouter",
                                                             "*.egg-info", "__pycache__", ".pytest_cache"))
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(wheels),
          str(src)], tmp_path)
    (wheel,) = wheels.glob("dbrouter-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for item in ("dbt_project.yml", "models/marts/catalog/kb_databases.sql", "macros/utils/get_var.sql",
                 "profiles.example.yml", "tests/dbt/assert_join_edges_are_symmetric.sql"):
        assert f"dbrouter/dbt_project/{item}" in names, item
    assert not any(n.startswith("dbrouter/dbt_project/target/") for n in names)
    assert "dbrouter/py.typed" in names  # PEP 561: type checkers read the package's hints

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    site = Path(_run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     tmp_path).stdout.strip())
    (site / "zz_project_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--ignore-installed",
          str(wheel)], tmp_path)
    dbt = venv / "bin" / "dbt"  # what pip writes for dbt-core's entry point
    dbt.write_text(f"#!{venv / 'bin' / 'python'}\n" + Path(sys.executable).with_name("dbt").read_text().split("\n", 1)[1])
    dbt.chmod(0o755)

    work = tmp_path / "elsewhere"
    work.mkdir()
    sources = copy_demo(work)
    env = {"DBROUTER_EMBEDDER": "hash"}
    probe = _run([str(venv / "bin" / "python"), "-c", "import dbrouter.kb.dbt_runner as r; print(r.project_dir())"],
                 work, env)
    assert probe.stdout.strip() == str(site / "dbrouter" / "dbt_project")
    _run([str(venv / "bin" / "dbrouter"), "build", "--sources", str(sources), "--warehouse", "kb.duckdb"], work, env)
    out = _run([str(venv / "bin" / "dbrouter"), "route", "--warehouse", "kb.duckdb", "--k", "1", "--json",
                "Which orchestra has the most performances?"], work, env)
    assert '"db_id": "orchestra"' in out.stdout
    assert not (site / "dbrouter" / "dbt_project" / "target").exists()  # dbt writes next to the warehouse
    shutil.rmtree(venv)
