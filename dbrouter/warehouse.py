"""Open the warehouse from plain Python with dbrouter's UDFs registered."""

from __future__ import annotations

from pathlib import Path

from dbrouter.errors import WarehouseError


def connect(path: str | Path, read_only: bool = True, embedder: str | None = None):
    """Open a DuckDB warehouse built by ``dbrouter build`` and register the UDFs.

    Args:
        path: the warehouse file.
        read_only: open read-only (default; routing never writes).
        embedder: ``minilm`` or ``hash``; defaults to ``$DBROUTER_EMBEDDER`` or ``minilm``.
            Must be the embedder the knowledge base was built with.

    Returns:
        A ``duckdb.DuckDBPyConnection`` on which ``route_query`` & co. work.

    Raises:
        WarehouseError: the file does not exist or holds no knowledge base.
    """
    import duckdb

    from python_udfs.plugin import register_udfs

    path = Path(path)
    if not path.is_file():
        raise WarehouseError(f"warehouse {path} not found: run `dbrouter build --sources ... --warehouse {path}` first")
    try:
        con = duckdb.connect(str(path), read_only=read_only)
    except duckdb.IOException as exc:
        raise WarehouseError(f"cannot open {path}: {exc}. Another process (a running `dbrouter build`?) holds "
                             "it for writing; retry when it has finished") from exc
    register_udfs(con, embedder)
    found = con.execute(
        "select count(*) from duckdb_functions() where function_name = 'route_query_ranked'").fetchall()[0][0]
    if not found:
        con.close()
        raise WarehouseError(f"{path} has no route functions: run `dbrouter build` (dbt build) on it first")
    return con
