"""Results on the Postgres wire: typed RowDescription and DataRow messages, text or binary per column.

buenavista 0.5 types a column by its Arrow type alone and has no binary form for numeric, text,
timestamps with a time zone or arrays (psycopg's ``binary=True`` got ``tuple index out of range``
and a dropped connection; pgjdbc's binary transfer a naive/aware ``datetime`` error). Here every
column carries the Postgres type :func:`dbrouter.serve.pgtypes.wire_type` gives its DuckDB type
(kept in the Arrow schema's metadata by :func:`typed_table`), and is encoded in the format the
client asked for in Bind: text (``t``, ``2026-11-27 04:48:20.5+00``) or binary.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from buenavista.core import QueryResult

from dbrouter.serve.pgtypes import RAW_TEMPORAL, TEXT, TYPES, WireType, encode_binary, encode_text, wire_type

_KEY = b"dbrouter.pg"


def project_for_wire(rel) -> tuple[Any, list[WireType]]:
    """``rel`` with every column Postgres has no form for cast in DuckDB (STRUCT/MAP to json, ENUM to
    text...), and each column's :class:`~dbrouter.serve.pgtypes.WireType`.

    Args:
        rel: a DuckDB relation (the client's statement).

    Returns:
        The relation to fetch and the wire types of its columns.
    """
    wires = [wire_type(str(t)) for t in rel.types]
    if any(w.cast for w in wires):
        exprs = []
        for name, wire in zip(rel.columns, wires):
            quoted = '"' + name.replace('"', '""') + '"'
            exprs.append(f"{wire.cast.format(quoted)} AS {quoted}" if wire.cast else quoted)
        rel = rel.project(", ".join(exprs))
    return rel, wires


def typed_table(table, wires: list[WireType]):
    """``table`` (a ``pyarrow.Table``) with its columns' wire types in the schema's metadata."""
    return table.replace_schema_metadata({_KEY: json.dumps([[w.oid, w.typmod] for w in wires])})


def wires_of(table) -> list[WireType]:
    """The wire types :func:`typed_table` stored, or ``text`` for a table without them."""
    meta = (table.schema.metadata or {}).get(_KEY)
    if meta is None:
        return [WireType(TEXT)] * table.num_columns
    return [WireType(oid, typmod) for oid, typmod in json.loads(meta)]


class TypedResult(QueryResult):
    """A result whose columns keep their Postgres types (see the module docstring).

    Rows are read once, in order: an Execute with a row limit resumes where the last one stopped.
    """

    def __init__(self, table=None, status: str | None = None) -> None:
        super().__init__()
        self.table = table
        self.names: list[str] = list(table.schema.names) if table is not None else []
        self.wires = wires_of(table) if table is not None else []
        self._status = status
        self._rows = self._iterate()

    def has_results(self) -> bool:
        return self.table is not None

    def column_count(self) -> int:
        return self.table.num_columns if self.table is not None else 0

    def column(self, index: int):
        return self.names[index], self.wires[index]

    def _iterate(self) -> Iterator[list]:
        if self.table is None:
            return
        for batch in self.table.to_batches(max_chunksize=4096):
            columns = []
            for column, wire in zip(batch.columns, self.wires):
                if wire.oid in RAW_TEMPORAL:  # raw days / microseconds: 'infinity' has no datetime
                    column = column.cast(pa.int32() if wire.oid == 1082 else pa.int64())
                columns.append(column.to_pylist())
            for values in zip(*columns):
                yield list(values)

    def rows(self) -> Iterator[list]:
        return self._rows

    def status(self) -> str:
        return self._status or ""


def row_description(result: TypedResult) -> bytes:
    """The RowDescription message: each column's name, type OID, length, modifier and format."""
    body = bytearray()
    formats = result.result_format or []
    for i, (name, wire) in enumerate(zip(result.names, result.wires)):
        fmt = formats[i] if i < len(formats) else 0
        length = TYPES[wire.oid].length if wire.oid in TYPES else -1
        body += name.encode("utf-8") + b"\x00" + struct.pack("!ihihih", 0, 0, wire.oid, length, wire.typmod, fmt)
    return struct.pack("!cih", b"T", len(body) + 6, len(result.wires)) + bytes(body)


def data_rows(result: TypedResult, write, limit: int = 0) -> int:
    """Send ``result``'s rows as DataRow messages through ``write``; at most ``limit`` (0: all).

    Returns:
        The number of rows sent.
    """
    formats = result.result_format or []
    encoders = []
    for i, wire in enumerate(result.wires):
        binary = (formats[i] if i < len(formats) else 0) == 1
        encoders.append((wire.oid, binary))
    count = len(encoders)
    sent = 0
    chunk = bytearray()
    for row in result.rows():
        body = bytearray(struct.pack("!h", count))
        for value, (oid, binary) in zip(row, encoders):
            if value is None:
                body += b"\xff\xff\xff\xff"
                continue
            data = encode_binary(oid, value) if binary else encode_text(oid, value).encode("utf-8")
            body += struct.pack("!i", len(data)) + data
        chunk += b"D" + struct.pack("!i", len(body) + 4) + body
        sent += 1
        if len(chunk) > 65_536:
            write(bytes(chunk))
            chunk.clear()
        if limit > 0 and sent >= limit:
            break
    if chunk:
        write(bytes(chunk))
    return sent
