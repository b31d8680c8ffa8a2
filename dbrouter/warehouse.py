"""Open the warehouse from plain Python with dbrouter's UDFs registered."""

from __future__ import annotations

import os
from pathlib import Path

from dbrouter.errors import EmbedderMismatch, WarehouseError


def connect(path: str | Path, read_only: bool = True, embedder: str | None = None):
    """Open a DuckDB warehouse built by ``dbrouter build`` and register the UDFs.

    The knowledge base records which embedder made its vectors; that is the embedder this
    connection registers. Asking for another one (``embedder`` or ``$DBROUTER_EMBEDDER``) is an
    error, because routing would compare vectors of two different models and find nothing.

    Args:
        path: the warehouse file.
        read_only: open read-only (default; routing never writes).
        embedder: ``minilm``, ``m2v`` or ``hash``; default: the knowledge base's own embedder.

    Returns:
        A ``duckdb.DuckDBPyConnection`` on which ``route_query`` & co. work.

    Raises:
        WarehouseError: the file does not exist, is locked by a writer, or holds no knowledge base.
        EmbedderMismatch: the asked-for embedder is not the one the knowledge base was built with.
    """
    import duckdb

    from python_udfs.plugin import register_udfs

    path = Path(path)
    if not path.is_file():
        raise WarehouseError(f"warehouse {path} not found: run `dbrouter build --sources ... --warehouse {path}` first")
    try:
        con = duckdb.connect(str(path), read_only=read_only)
    except duckdb.IOException as exc:
        if "lock" not in str(exc).lower():  # e.g. "not a valid DuckDB database file"
            raise WarehouseError(f"cannot open {path} as a DuckDB warehouse: {exc}. Point --warehouse at the "
                                 "file `dbrouter build` wrote") from exc
        raise WarehouseError(f"cannot open {path}: {exc}. Another process (a running `dbrouter build`?) holds "
                             "it for writing; retry when it has finished") from exc
    except duckdb.Error as exc:
        raise WarehouseError(f"cannot open {path} as a DuckDB warehouse: {exc}") from exc
    try:
        found = con.execute(
            "select count(*) from duckdb_functions() where function_name = 'route_query_ranked'").fetchall()[0][0]
        if not found:
            raise WarehouseError(f"{path} has no route functions: run `dbrouter build` (dbt build) on it first")
        register_udfs(con, _embedder_for(con, path, embedder))
    except BaseException:
        con.close()
        raise
    return con


def kb_embedders(con) -> list[str]:
    """The embedder names the knowledge base's current vectors were made with (normally one).

    Args:
        con: an open DuckDB connection to a built warehouse.

    Returns:
        Sorted distinct ``embedding_model`` labels of ``kb_document_embeddings`` (empty: no vectors).
    """
    rows = con.execute("select distinct embedding_model from kb_document_embeddings order by 1").fetchall()
    return [r[0] for r in rows if r[0]]


def _embedder_for(con, path: Path, asked: str | None) -> str | None:
    """The embedder to register: the KB's own; an explicit or environment choice must match it."""
    built_with = kb_embedders(con)
    source = "the embedder argument (--embedder)" if asked else "$DBROUTER_EMBEDDER"
    asked = asked or os.environ.get("DBROUTER_EMBEDDER")
    if not built_with:
        return asked  # an empty KB: route_query_json reports that nothing is embedded
    if asked and asked.strip().lower() not in built_with:
        raise EmbedderMismatch(
            f"{path} was built with embedder {', '.join(built_with)} but {source} asks for {asked!r}: "
            f"use {built_with[0]!r} (or leave it unset), or rebuild with `dbrouter build --embedder {asked}`")
    return built_with[0]
