"""The source types, kept once: the sources file, ingest, refresh and ``ask`` all look a type up here.

Adding a type (BigQuery, Parquet, ...) is one module in :mod:`dbrouter.sources` with a class
implementing :class:`dbrouter.sources.base.SourceType`, and one line below.
"""

from __future__ import annotations

from dbrouter.errors import DbrouterError
from dbrouter.sources.base import SourceType
from dbrouter.sources.duckdb import DuckdbSource
from dbrouter.sources.schema_json import SchemaJsonSource
from dbrouter.sources.snowflake import SnowflakeSource
from dbrouter.sources.sqlite import SqliteSource
from dbrouter.sources.url import UrlSource

SOURCE_TYPES: dict[str, SourceType] = {t.name: t for t in (
    SqliteSource(), DuckdbSource(), SchemaJsonSource(), SnowflakeSource(), UrlSource())}
"""Every source type by its ``type:`` name, in the order docs/sources.md documents them."""


def source_type(name: str) -> SourceType:
    """The source type called ``name``.

    Args:
        name: a ``type:`` of the sources file (``kb_databases.source_type``).

    Returns:
        Its :class:`~dbrouter.sources.base.SourceType`.

    Raises:
        DbrouterError: no such type (the message lists the known ones).
    """
    try:
        return SOURCE_TYPES[name]
    except KeyError:
        raise DbrouterError(f"unknown source type {name!r}; known: {', '.join(SOURCE_TYPES)}") from None
