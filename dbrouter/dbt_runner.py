"""Run dbt on the dbrouter project from the CLI (in a subprocess, so dbt's connection
and the caller's never share a DuckDB file handle)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from dbrouter.errors import DbtRunError

PROJECT_DIR = Path(__file__).resolve().parents[1]


def project_dir() -> Path:
    """The dbt project directory: ``$DBROUTER_PROJECT_DIR`` or the repository holding this package."""
    path = Path(os.environ.get("DBROUTER_PROJECT_DIR") or PROJECT_DIR)
    if not (path / "dbt_project.yml").is_file():
        raise DbtRunError(f"no dbt_project.yml in {path}: set DBROUTER_PROJECT_DIR to the dbrouter checkout")
    return path


def profiles_dir(workdir: Path) -> Path:
    """A profiles folder with profile ``dbrouter``: ``$DBT_PROFILES_DIR`` if set, else a copy of
    ``profiles.example.yml`` written to ``<workdir>/profiles``."""
    if os.environ.get("DBT_PROFILES_DIR"):
        return Path(os.environ["DBT_PROFILES_DIR"])
    out = workdir / "profiles"
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(project_dir() / "profiles.example.yml", out / "profiles.yml")
    return out


def dbt_executable() -> str:
    """The ``dbt`` next to the running Python (the project's venv), else the one on PATH."""
    local = Path(sys.executable).parent / "dbt"
    if local.exists():
        return str(local)
    found = shutil.which("dbt")
    if not found:
        raise DbtRunError("dbt is not installed: run `make setup`")
    return found


def dbt_workdir(warehouse: Path) -> Path:
    """Where :func:`run_dbt` keeps dbt's profiles, ``target/`` and ``logs/`` for ``warehouse``.

    Args:
        warehouse: the DuckDB warehouse file.

    Returns:
        ``<warehouse folder>/.dbrouter-dbt``.
    """
    return warehouse.resolve().parent / ".dbrouter-dbt"


def target_path(warehouse: Path) -> Path:
    """dbt's target folder for builds of ``warehouse`` (``run_results.json``, ``manifest.json``).

    Args:
        warehouse: the DuckDB warehouse file.

    Returns:
        ``<warehouse folder>/.dbrouter-dbt/target``.
    """
    return dbt_workdir(warehouse) / "target"


def run_dbt(args: list[str], warehouse: Path, embedder: str | None = None,
            extra_env: dict[str, str] | None = None, quiet: bool = False) -> str:
    """Run ``dbt <args>`` against ``warehouse``.

    Args:
        args: dbt arguments, e.g. ``["build"]``.
        warehouse: DuckDB warehouse file.
        embedder: embedder name passed to the profile (``$DBROUTER_EMBEDDER``).
        extra_env: more environment variables.
        quiet: capture output instead of streaming it.

    Returns:
        dbt's output when ``quiet``, else an empty string.

    Raises:
        DbtRunError: dbt exited non-zero (the message holds the tail of its output).
    """
    workdir = dbt_workdir(warehouse)
    env = dict(os.environ)
    env["DBROUTER_WAREHOUSE"] = str(warehouse.resolve())
    if embedder:
        env["DBROUTER_EMBEDDER"] = embedder
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    env.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    env.update(extra_env or {})
    cmd = [dbt_executable(), *args, "--project-dir", str(project_dir()),
           "--profiles-dir", str(profiles_dir(workdir)),
           "--target-path", str(target_path(warehouse)), "--log-path", str(workdir / "logs")]
    proc = subprocess.run(cmd, env=env, cwd=str(project_dir()), text=True,
                          capture_output=quiet)
    if proc.returncode != 0:
        tail = "\n".join(((proc.stdout or "") + (proc.stderr or "")).splitlines()[-30:])
        raise DbtRunError(f"`dbt {' '.join(args)}` failed (exit {proc.returncode}); "
                          f"see {workdir / 'logs' / 'dbt.log'}\n{tail}")
    return proc.stdout or ""
