"""Shared fixtures: a copy of the demo repository and a built knowledge base (hash embedder)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DBROUTER = str(Path(sys.executable).parent / "dbrouter")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")


def _free_space() -> tuple[str, bool]:
    """The free space of the temporary directory and whether it is short: the suite builds KBs and
    PostgreSQL clusters there (about 1.5 GB in all), and a full disk fails them obscurely."""
    import tempfile
    free = shutil.disk_usage(tempfile.gettempdir()).free / 2**30
    short = free < 3
    warn = "  (less than 3 GiB: tests that build KBs or start PostgreSQL may fail)" if short else ""
    return f"dbrouter: {free:.1f} GiB free in {tempfile.gettempdir()}{warn}", short


def pytest_report_header(config: pytest.Config) -> str:
    """The free space at the top of a verbose run."""
    return _free_space()[0]


def pytest_sessionstart(session: pytest.Session) -> None:
    """The same line on stderr in a quiet run (`make test`), when the disk is short."""
    line, short = _free_space()
    if short and not hasattr(session.config, "workerinput"):
        sys.stderr.write(line + "\n")


def run_cli(*args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run the real `dbrouter` entry point; returns the completed process."""
    # no query log unless a test asks for one: a CLI call would append to <warehouse>.query_log.jsonl
    full_env = {**os.environ, "DBROUTER_EMBEDDER": "hash", "DBROUTER_LOG": "off", **(env or {})}
    proc = subprocess.run([DBROUTER, *args], capture_output=True, text=True, env=full_env, cwd=str(ROOT))
    if check and proc.returncode != 0:
        raise AssertionError(f"dbrouter {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def copy_demo(dest: Path) -> Path:
    """Copy the demo databases and a sources file to ``dest``; returns the sources file."""
    shutil.copytree(ROOT / "demo" / "databases", dest / "databases")
    shutil.copytree(ROOT / "demo" / "schemas", dest / "schemas")
    for name in ("sources.yml", "examples.jsonl", "statements.jsonl"):
        shutil.copyfile(ROOT / "demo" / name, dest / name)
    return dest / "sources.yml"


def copy_project(dest: Path) -> Path:
    """Copy the dbt project (only what dbt reads: tests/dbt of tests/) to ``dest`` for a test that
    changes it; returns ``dest`` (point ``DBROUTER_PROJECT_DIR`` at it)."""
    dest.mkdir(parents=True, exist_ok=True)
    for item in ("dbt_project.yml", "profiles.example.yml", "models", "macros", "seeds", "tests/dbt", "analyses"):
        src, target = ROOT / item, dest / item
        if src.is_dir():
            shutil.copytree(src, target, symlinks=True)
        else:
            shutil.copyfile(src, target)
    return dest


@pytest.fixture(scope="session")
def built_kb(tmp_path_factory) -> dict:
    """The demo KB built once by `dbrouter build` with the hash embedder."""
    base = tmp_path_factory.mktemp("kb")
    sources = copy_demo(base)
    warehouse = base / "kb.duckdb"
    proc = run_cli("build", "--sources", str(sources), "--warehouse", str(warehouse))
    return {"base": base, "sources": sources, "warehouse": warehouse, "log": proc.stdout + proc.stderr}


def copy_built_kb(built_kb: dict, dest: Path) -> dict:
    """A private copy of the shared demo KB's folder at ``dest`` (which may exist): its sources,
    databases, warehouse and dbt workdir, in a second instead of a build's 30. Not a no-op build's
    start: the sources' digest covers their paths, so the copy's next build rebuilds (the
    embedding cache makes it embed only what changed). The query log other tests wrote beside the
    warehouse stays behind.

    Returns:
        ``{"base", "sources", "warehouse"}`` of the copy.
    """
    shutil.copytree(built_kb["base"], dest, symlinks=True, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("*.query_log.jsonl"))
    return {"base": dest, "sources": dest / built_kb["sources"].relative_to(built_kb["base"]),
            "warehouse": dest / built_kb["warehouse"].relative_to(built_kb["base"])}


@pytest.fixture()
def kb_con(built_kb):
    import dbrouter

    con = dbrouter.connect(built_kb["warehouse"], embedder="hash")
    yield con
    con.close()
