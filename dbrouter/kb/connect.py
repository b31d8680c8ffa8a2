"""Open the warehouse from plain Python with dbrouter's UDFs registered."""

from __future__ import annotations

import re
from pathlib import Path

from dbrouter import settings
from dbrouter.connection import Connection, record_route_path
from dbrouter.errors import EmbedderMismatch, WarehouseError
from dbrouter.kb import ROUTE_PATHS
from dbrouter.kb.held_sql import held_ddl
from python_udfs.plugin import register_udfs


def connect(path: str | Path, read_only: bool = True, embedder: str | None = None, route_path: str = "udf",
            max_texts: int | None = None, config: dict | None = None, plain_names: bool = True):
    """Open a DuckDB warehouse built by ``dbrouter build`` and register the UDFs.

    The knowledge base records which embedder made its vectors; that is the embedder this
    connection registers. Asking for another one (``embedder`` or ``$DBROUTER_EMBEDDER``) is an
    error, because routing would compare vectors of two different models and find nothing.

    The plain-named entry points (``route_query``, ``retrieve_examples``, ...) stored in the file
    are the pure-SQL path, which any DuckDB client can call; this connection gets ``route_path``'s
    (see :func:`use_route_path`). On a read-only connection of the UDF path, ``route_query`` and
    ``route_query_json`` are answered through the routing query held for the connection from its
    second question on (:mod:`dbrouter.kb.held_sql`): the same answers without planning the query
    again. ``route_query_udf`` / ``route_query_sql`` & co. name a path
    explicitly on any connection, and dbrouter's own functions (:func:`dbrouter.route`, the
    retrieval functions, ...) call those (:func:`dbrouter.connection.entry`), so they need no
    plain names.

    Args:
        path: the warehouse file.
        read_only: open read-only (default; routing never writes).
        embedder: ``minilm``, ``m2v`` or ``hash``; default: the knowledge base's own embedder.
        route_path: ``udf`` (default: the transformer question vector, measured better in
            BENCHMARKS.md) or ``sql`` (what a plain DuckDB client gets).
        max_texts: the most distinct texts one call of ``embed``/``embed_phrase`` takes (see
            :func:`python_udfs.plugin.register_udfs`); None: no limit.
        config: DuckDB settings given at opening (they hold for every cursor, unlike ``SET`` of
            a connection-local setting); None: DuckDB's defaults.
        plain_names: give the connection the plain names (default). Each is a temp macro that
            DuckDB binds, with the whole routing query under it, when it is created: ~60-100 ms of
            CPU for the nine, which a process routing one question (the CLI) need not pay when
            only dbrouter's functions use the connection. With False, SQL on the connection names
            the path (``select route_query_udf(...)``): the plain names there are the file's, the
            pure-SQL path.

    Returns:
        A ``duckdb.DuckDBPyConnection`` on which ``route_query`` & co. work (``route_query_<path>``
        & co. with ``plain_names=False``).

    Raises:
        WarehouseError: the file does not exist, is locked by a writer, holds no knowledge base, or
            ``route_path`` is unknown.
        EmbedderMismatch: the asked-for embedder is not the one the knowledge base was built with.
    """
    import duckdb

    if route_path not in ROUTE_PATHS:
        raise WarehouseError(f"unknown route path {route_path!r}: choose one of {', '.join(ROUTE_PATHS)}")
    path = Path(path)
    if not path.is_file():
        raise WarehouseError(f"warehouse {path} not found: run `dbrouter build --sources ... --warehouse {path}` first")
    try:
        con = duckdb.connect(str(path), read_only=read_only, config=config or {})
    except duckdb.IOException as exc:
        if "lock" not in str(exc).lower():  # e.g. "not a valid DuckDB database file"
            raise WarehouseError(f"cannot open {path} as a DuckDB warehouse: {exc}. Point --warehouse at the "
                                 "file `dbrouter build` wrote") from exc
        raise WarehouseError(f"cannot open {path}: {exc}. Another process (a running `dbrouter build`?) holds "
                             "it for writing; retry when it has finished") from exc
    except duckdb.Error as exc:
        raise WarehouseError(f"cannot open {path} as a DuckDB warehouse: {exc}") from exc
    try:
        con.execute("SET enable_progress_bar=false")  # DuckDB draws one on the terminal for a query over 2 s
        schema = _find_kb_schema(con, path)
        ddl = route_path_ddl(con, route_path)
        if ddl is None and not has_function(con, "route_query_ranked"):
            raise _no_route_functions(path)
        register_udfs(con, _embedder_for(con, path, embedder), max_texts)
        if ddl:
            record_route_path(con, route_path)
        if ddl and plain_names:  # after the UDFs: the path's macros name them
            if read_only and route_path == "udf" and schema == "main":  # route_query answered held
                ddl = held_ddl(con, ddl)
            try:
                con.execute(ddl)
            except duckdb.Error as exc:
                if (other := another_version(exc, path)) is not None:
                    raise WarehouseError(other) from exc
                raise
    except BaseException:
        con.close()
        raise
    return con


_OTHER_UDF = re.compile(r"(?:function with name\s+|argument types\s+')(dbrouter_\w+)", re.IGNORECASE)


def another_version(exc: Exception, warehouse: object) -> str | None:
    """The message for a KB built by another version of dbrouter, or None when ``exc`` is not that.

    Its route functions call a ``dbrouter_`` UDF this version does not have, or has with other
    arguments (DuckDB's catalog or binder error names it): the KB must be rebuilt.

    Args:
        exc: a DuckDB error.
        warehouse: the KB's path, for the message.

    Returns:
        The message, or None.
    """
    detail = " ".join(str(exc).split())
    found = _OTHER_UDF.search(detail)
    if found is None:
        return None
    return (f"the knowledge base's route functions call {found.group(1)}, which this version of dbrouter does not "
            f"have with those arguments: {warehouse} was built by another version; rebuild it with `dbrouter build` "
            f"({detail})")


def _find_kb_schema(con: Connection, path: Path) -> str:
    """Make the KB's tables readable by their plain names wherever the build put them.

    ``dbrouter build`` writes them to the default schema; dbrouter used as a dbt package in another
    project writes them to ``<target schema>_dbrouter`` (``main_dbrouter``), which then goes first
    on this connection's search path.

    Returns:
        The schema holding them (``main`` for ``dbrouter build``'s).

    Raises:
        WarehouseError: no schema holds the knowledge base's tables, or several do.
    """
    import duckdb

    try:  # the common case without scanning duckdb_tables() (~15 ms)
        con.execute("select 1 from main.kb_databases limit 0").fetchall()
        return "main"
    except duckdb.CatalogException:
        pass
    schemas = [r[0] for r in con.execute("select distinct schema_name from duckdb_tables() "
                                         "where table_name = 'kb_databases' and database_name = current_database() "
                                         "order by 1").fetchall()]
    if "main" in schemas:
        return "main"
    if not schemas and not has_function(con, "route_query_ranked"):
        raise _no_route_functions(path)
    if len(schemas) != 1:
        found = f"several schemas hold one ({', '.join(schemas)})" if schemas else "no schema holds kb_databases"
        raise WarehouseError(f"{path} has route functions but {found}: point --warehouse at the file `dbrouter build` "
                             "or your dbt project wrote, or build it again")
    con.execute(f"SET search_path = '{schemas[0].replace(chr(39), chr(39) * 2)},main'")
    return schemas[0]


def use_route_path(con: Connection, route_path: str) -> None:
    """Make the plain-named entry points of this connection call one path's macros.

    Temp macros (searched before the file's) shadow ``route_query``, ``route_query_json``,
    ``route_query_ranked``, ..., ``retrieve_columns`` with ``<name>_<route_path>``; their text
    comes from the knowledge base (:func:`route_path_ddl`). Temp macros belong to one connection:
    a ``cursor()`` of it does not see them and needs its own call.

    Args:
        con: an open connection to a built warehouse (the UDFs registered for path ``udf``).
        route_path: ``udf`` or ``sql``.

    Raises:
        WarehouseError: see :func:`route_path_ddl`.
    """
    ddl = route_path_ddl(con, route_path)
    if ddl:
        con.execute(ddl)
        record_route_path(con, route_path)


def route_path_ddl(con: Connection, route_path: str) -> str | None:
    """The CREATE TEMP MACRO statements that give a connection ``route_path``'s entry points.

    Args:
        con: an open connection to a built warehouse.
        route_path: ``udf`` or ``sql``.

    Returns:
        The statements (from the KB's ``dbrouter_route_path_ddl``), or None for a knowledge base
        built before the two paths, whose plain names already are the UDF path.

    Raises:
        WarehouseError: ``route_path`` is unknown, or ``sql`` is asked of a knowledge base that
            has no pure-SQL path.
    """
    if route_path not in ROUTE_PATHS:
        raise WarehouseError(f"unknown route path {route_path!r}: choose one of {', '.join(ROUTE_PATHS)}")
    import duckdb

    try:  # a call, not a look in duckdb_functions(), which renders every macro's text (~30 ms)
        return con.execute("select dbrouter_route_path_ddl(?)", [route_path]).fetchall()[0][0]
    except duckdb.CatalogException as exc:
        if "dbrouter_route_path_ddl" not in str(exc):
            raise
    if route_path == "sql":
        raise WarehouseError("this knowledge base has no pure-SQL route path (built by an older dbrouter): "
                             "run `dbrouter build` again")
    return None


def _no_route_functions(path: Path) -> WarehouseError:
    """The error for a DuckDB file that holds no routing functions (no KB, or a partial build)."""
    return WarehouseError(f"{path} has no route functions: run `dbrouter build` (dbt build) on it first")


def has_function(con: Connection, name: str) -> bool:
    """Whether the warehouse defines a function or macro ``name`` (any schema)."""
    return bool(con.execute("select count(*) from duckdb_functions() where function_name = ?", [name]).fetchall()[0][0])


def kb_embedders(con: Connection) -> list[str]:
    """The embedder names the knowledge base's current vectors were made with (normally one).

    Args:
        con: an open DuckDB connection to a built warehouse.

    Returns:
        Sorted distinct ``embedding_model`` labels of ``kb_document_embeddings`` (empty: no vectors).
    """
    rows = con.execute("select distinct embedding_model from kb_document_embeddings order by 1").fetchall()
    return [r[0] for r in rows if r[0]]


def _embedder_for(con: Connection, path: Path, asked: str | None) -> str | None:
    """The embedder to register: the KB's own; an explicit or environment choice must match it."""
    built_with = kb_embedders(con)
    source = "the embedder argument (--embedder)" if asked else "$DBROUTER_EMBEDDER"
    asked = asked or settings.env("DBROUTER_EMBEDDER")
    if not built_with:
        return asked  # an empty KB: route_query_json reports that nothing is embedded
    if asked and asked.strip().lower() not in built_with:
        raise EmbedderMismatch(
            f"{path} was built with embedder {', '.join(built_with)} but {source} asks for {asked!r}: "
            f"use {built_with[0]!r} (or leave it unset), or rebuild with `dbrouter build --embedder {asked}`")
    return built_with[0]
