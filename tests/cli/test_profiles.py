"""Profile and warehouse mix-ups give a clear error before anything runs."""

from __future__ import annotations

from tests.conftest import copy_demo, run_cli


def _profiles(tmp_path, text: str | None):
    folder = tmp_path / "profiles"
    folder.mkdir()
    if text is not None:
        (folder / "profiles.yml").write_text(text)
    return folder


def test_dbt_profiles_dir_without_the_dbrouter_profile(tmp_path):
    sources = copy_demo(tmp_path)
    folder = _profiles(tmp_path, "other:\n  target: dev\n  outputs:\n    dev: {type: duckdb, path: x.duckdb}\n")
    proc = run_cli("build", "--sources", str(sources), "--warehouse", str(tmp_path / "kb.duckdb"),
                   env={"DBT_PROFILES_DIR": str(folder)}, check=False)
    assert proc.returncode == 2
    assert "has no profile named 'dbrouter'" in proc.stderr and "DBT_PROFILES_DIR" in proc.stderr
    assert not (tmp_path / "kb.duckdb").exists()


def test_dbt_profiles_dir_that_is_empty(tmp_path):
    sources = copy_demo(tmp_path)
    folder = _profiles(tmp_path, None)
    proc = run_cli("build", "--sources", str(sources), "--warehouse", str(tmp_path / "kb.duckdb"),
                   env={"DBT_PROFILES_DIR": str(folder)}, check=False)
    assert proc.returncode == 2 and "profiles.yml" in proc.stderr and "unset DBT_PROFILES_DIR" in proc.stderr


def test_a_profile_with_a_fixed_path_is_refused_by_build(tmp_path):
    sources = copy_demo(tmp_path)
    folder = _profiles(tmp_path, "dbrouter:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n"
                                 f"      path: '{tmp_path / 'fixed.duckdb'}'\n")
    proc = run_cli("build", "--sources", str(sources), "--warehouse", str(tmp_path / "kb.duckdb"),
                   env={"DBT_PROFILES_DIR": str(folder)}, check=False)
    assert proc.returncode == 2 and "env_var('DBROUTER_WAREHOUSE')" in proc.stderr
    assert not (tmp_path / "kb.duckdb").exists() and not (tmp_path / "fixed.duckdb").exists()
