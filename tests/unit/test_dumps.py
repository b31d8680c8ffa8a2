"""Benchmark SQL dumps loaded once into SQLite files (tiny fixture: one good dump, one broken)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from dbrouter.errors import BenchmarkError
from dbrouter.eval import dumps
from dbrouter.eval.dumps import load_dumps, targets
from dbrouter.execute.runners import execute
from dbrouter.sources.base import Target

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "dumps"


@pytest.fixture()
def bench(tmp_path) -> Path:
    """A copy of the fixture benchmark plus a schema-only dump (tables, no rows)."""
    dest = tmp_path / "bench"
    shutil.copytree(FIXTURE, dest)
    (dest / "sql" / "no_rows.sql").write_text('CREATE TABLE "t" ("a" int);\n', encoding="utf-8")
    return dest


def test_loads_good_dumps_and_reports_the_broken_one(bench, tmp_path):
    lines: list[str] = []
    cache = tmp_path / "cache"
    out = load_dumps(bench, cache, log=lines.append)
    assert sorted(out.paths) == ["no_rows", "pets"]
    assert out.paths["pets"] == cache / "pets.sqlite"
    assert list(out.failed) == ["broken"] and "no such table: nowhere" in out.failed["broken"]
    assert out.empty == ["no_rows"] and out.reused == 0
    assert any("broken" in line and "nowhere" in line and "skipped" in line for line in lines)
    assert "3/3 done (2 loaded, 0 reused, 1 failed, 1 without rows)" in lines[-1]
    assert not (cache / "broken.sqlite").exists()
    assert sorted(p.name for p in cache.iterdir()) == ["no_rows.sqlite", "no_rows.stamp", "pets.sqlite", "pets.stamp"]
    pets = targets(out)["pets"]
    assert pets == Target("pets", "sqlite", cache / "pets.sqlite")
    result = execute(pets, "SELECT o.name, count(*) FROM owner AS o JOIN pet AS p USING (owner_id) "
                           "GROUP BY o.name ORDER BY o.name")
    assert result.ok and result.rows == [("Ana", 2), ('Bo; the "second"', 1)]


def test_loaded_files_are_reused_until_the_dump_changes(bench, tmp_path):
    cache = tmp_path / "cache"
    load_dumps(bench, cache, ["pets"], log=lambda _m: None)
    loaded = (cache / "pets.sqlite").stat().st_mtime_ns
    again = load_dumps(bench, cache, ["pets"], log=lambda _m: None)
    assert again.reused == 1 and (cache / "pets.sqlite").stat().st_mtime_ns == loaded
    dump = bench / "sql" / "pets.sql"
    dump.write_text(dump.read_text().replace("COMMIT;", "INSERT INTO owner VALUES (3, 'Cy');\nCOMMIT;"))
    changed = load_dumps(bench, cache, ["pets"], log=lambda _m: None)
    assert changed.reused == 0
    assert execute(targets(changed)["pets"], "SELECT count(*) FROM owner").rows == [(3,)]


def test_a_dump_that_breaks_later_is_not_reused(bench, tmp_path):
    cache = tmp_path / "cache"
    load_dumps(bench, cache, ["pets"], log=lambda _m: None)
    dump = bench / "sql" / "pets.sql"
    dump.write_text(dump.read_text() + "INSERT INTO pet VALUES (1, 2);\n")  # 2 values for 4 columns
    out = load_dumps(bench, cache, ["pets"], log=lambda _m: None)
    assert "pets" in out.failed and "4 columns but 2 values" in out.failed["pets"]
    assert not (cache / "pets.stamp").exists()


def test_selected_db_ids_and_missing_dumps(bench, tmp_path):
    out = load_dumps(bench, tmp_path / "cache", ["pets", "pets", "ghost"], log=lambda _m: None)
    assert list(out.paths) == ["pets"]
    assert out.failed == {"ghost": f"no dump file {bench / 'sql' / 'ghost.sql'}"}


def test_progress_every_n_databases(bench, tmp_path, monkeypatch):
    monkeypatch.setattr(dumps, "PROGRESS_EVERY", 1)
    lines: list[str] = []
    load_dumps(bench, tmp_path / "cache", log=lines.append)
    progress = [line for line in lines if line.startswith("dumps: ")]
    assert [line.split(" done")[0] for line in progress] == ["dumps: 1/3", "dumps: 2/3", "dumps: 3/3"]


def test_leftover_of_a_killed_load_is_deleted(bench, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    dead = cache / ".pets.sqlite.tmp-999999999"
    mine = cache / f".other.sqlite.tmp-{os.getpid()}"
    dead.write_text("half a database")
    mine.write_text("being written")
    load_dumps(bench, cache, ["pets"], log=lambda _m: None)
    assert not dead.exists() and mine.exists()


def test_benchmark_without_sql_dir(tmp_path):
    with pytest.raises(BenchmarkError, match="no SQL dumps"):
        load_dumps(tmp_path, tmp_path / "cache")
