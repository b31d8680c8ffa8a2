"""dbrouter.connect: clear errors for a missing file, a file that is not DuckDB, an empty warehouse."""

from __future__ import annotations

import duckdb
import pytest

from dbrouter.errors import WarehouseError
from dbrouter.kb.connect import connect


def test_missing_file_says_to_build(tmp_path):
    with pytest.raises(WarehouseError, match="not found: run `dbrouter build"):
        connect(tmp_path / "nope.duckdb")


def test_a_file_that_is_not_duckdb_is_not_called_locked(tmp_path):
    path = tmp_path / "notes.duckdb"
    path.write_text("hello " * 100)
    with pytest.raises(WarehouseError, match="as a DuckDB warehouse") as info:
        connect(path)
    assert "holds it for writing" not in str(info.value)


def test_a_duckdb_file_without_a_kb_says_to_build(tmp_path):
    path = tmp_path / "empty.duckdb"
    duckdb.connect(str(path)).close()
    with pytest.raises(WarehouseError, match="has no route functions"):
        connect(path)

