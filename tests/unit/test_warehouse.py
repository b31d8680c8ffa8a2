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



def test_a_kb_of_another_version_is_told_to_rebuild():
    """A route function calling a dbrouter UDF this version lacks (renamed, or other arguments) reads as
    a KB built by another version: rebuild. DuckDB's own errors, as a stale KB raises them."""
    from dbrouter.cli.common import warehouse_failure
    from dbrouter.kb.connect import another_version

    con = duckdb.connect()
    con.create_function("dbrouter_one", lambda x: x, [duckdb.sqltype("VARCHAR")], duckdb.sqltype("VARCHAR"))
    errors = []
    for sql in ("select dbrouter_gone('x')", "select dbrouter_one('x', 2)", "select no_such_function(1)"):
        with pytest.raises(duckdb.Error) as caught:
            con.execute(sql).fetchall()
        errors.append(caught.value)
    for exc, name in zip(errors[:2], ("dbrouter_gone", "dbrouter_one"), strict=True):
        message = another_version(exc, "/kb/x.duckdb")
        assert message is not None and name in message and "built by another version" in message
        assert warehouse_failure(exc, "/kb/x.duckdb") == message
    assert another_version(errors[2], "/kb/x.duckdb") is None
    assert "Check the embedder" in warehouse_failure(errors[2], "/kb/x.duckdb")
