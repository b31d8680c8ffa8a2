"""Postgres types on the wire: dbrouter's encoders read back by psycopg's own loaders (what a client
does), psycopg's binary dumpers read by dbrouter's decoders (what a client sends), the DuckDB ->
Postgres type table, parameter types from casts, and Postgres's column names."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal

import duckdb
import pytest
from psycopg import adapters
from psycopg.pq import Format

from dbrouter.serve.catalog import rewrite
from dbrouter.serve.pgtypes import (
    TYPES,
    decode_binary,
    encode_binary,
    encode_text,
    parameter_types,
    pg_array,
    wire_type,
)
from dbrouter.serve.statement import pg_column_names

UTC = dt.UTC
VALUES = [
    (16, True), (16, False), (21, -5), (23, 123456), (20, -(2**40)), (26, 4_000_000_000), (701, 1e-5), (701, 100.0),
    (701, -0.0), (1700, Decimal("1.50")), (1700, Decimal("-12345.000678")), (1700, Decimal("0.0001")),
    (1700, Decimal("1E+5")), (1700, Decimal("123456789012345678901234567890")), (1700, Decimal("0")),
    (25, "héllo"), (25, ""), (1043, "a b"), (17, b"\x00\xff"), (1082, dt.date(2026, 11, 27)),
    (1082, dt.date(1999, 1, 1)), (1083, dt.time(12, 0, 0, 500000)), (1114, dt.datetime(2026, 11, 27, 4, 48, 20, 670760)),
    (1114, dt.datetime(1990, 1, 1)), (1184, dt.datetime(2026, 11, 27, 4, 48, 20, 670760, tzinfo=UTC)),
    (1186, dt.timedelta(days=3, seconds=3723, microseconds=500000)), (2950, uuid.UUID(int=12345)),
    (1007, [1, None, 3]), (1009, ["a", "b c", "", None, 'q"x', "NULL", "{x}", "back\\slash"]), (1022, [1.5, 2.0]),
    (1185, [dt.datetime(2020, 1, 1, tzinfo=UTC)]), (1007, []), (1000, [True, False]),
]


@pytest.mark.parametrize("fmt", [Format.TEXT, Format.BINARY])
@pytest.mark.parametrize("oid, value", VALUES)
def test_psycopg_reads_back_what_dbrouter_sends(oid, value, fmt):
    data = encode_binary(oid, value) if fmt == Format.BINARY else encode_text(oid, value).encode()
    loaded = adapters.get_loader(oid, fmt)(oid).load(data)
    if oid == 26:
        assert int(loaded) == value
    else:
        assert (bytes(loaded) if oid == 17 else loaded) == value


def test_float4_text_is_the_shortest_that_reads_back():
    assert encode_text(700, 0.10000000149011612) == "0.1"  # what DuckDB's FLOAT 0.1 is as a Python float
    assert encode_text(701, 100.0) == "100" and encode_text(701, float("nan")) == "NaN"
    assert encode_text(701, float("-inf")) == "-Infinity"


class _MonthDayNano:  # what Arrow gives for an INTERVAL
    def __init__(self, months, days, nanoseconds):
        self.months, self.days, self.nanoseconds = months, days, nanoseconds


def test_intervals_print_as_postgres_does():
    assert encode_text(1186, _MonthDayNano(14, 3, 3_723_500_000_000)) == "1 year 2 mons 3 days 01:02:03.5"
    assert encode_text(1186, _MonthDayNano(-14, 0, 0)) == "-1 years -2 mons"
    assert encode_text(1186, _MonthDayNano(0, 0, 0)) == "00:00:00"


@pytest.mark.parametrize("oid, value", [v for v in VALUES if v[1] != []])
def test_dbrouter_reads_what_psycopg_sends_in_binary(oid, value):
    from psycopg.adapt import PyFormat, Transformer

    dumper = Transformer().get_dumper(value, PyFormat.BINARY)  # as psycopg binds a Python value
    assert decode_binary(dumper.oid, bytes(dumper.dump(value))) == value


def test_decode_refuses_what_it_cannot_read():
    with pytest.raises(ValueError, match="OID 600"):
        decode_binary(600, b"\x00" * 16)  # a point
    with pytest.raises(ValueError, match="2-dimensional"):
        decode_binary(1007, b"\x00\x00\x00\x02" + b"\x00" * 20)


@pytest.mark.parametrize("duck, oid, typmod, cast", [
    ("INTEGER", 23, -1, None), ("VARCHAR", 25, -1, None), ("DECIMAL(5,2)", 1700, (5 << 16 | 2) + 4, None),
    ("HUGEINT", 1700, -1, None), ("TIMESTAMP WITH TIME ZONE", 1184, -1, None), ("FLOAT[384]", 1021, -1, None),
    ("VARCHAR[]", 1009, -1, None), ("STRUCT(x INTEGER)", 114, -1, "to_json({})"),
    ("MAP(VARCHAR, INTEGER)", 114, -1, "to_json({})"), ("INTEGER[][]", 114, -1, "to_json({})"),
    ("TIMESTAMP_NS", 1114, -1, "CAST({} AS TIMESTAMP)"), ("ENUM('a', 'b')", 25, -1, "CAST({} AS VARCHAR)"),
])
def test_duckdb_types_map_to_postgres_ones(duck, oid, typmod, cast):
    wire = wire_type(duck)
    assert (wire.oid, wire.typmod, wire.cast) == (oid, typmod, cast)
    assert wire.oid in TYPES


def test_every_duckdb_type_of_a_result_is_sent_and_read_back():
    """Each DuckDB type, cast as wire_type says, encodes in both formats (nothing raises)."""
    from dbrouter.serve.wire import project_for_wire

    con = duckdb.connect()
    rel = con.sql("select {'x': 1} s, map {'a': 1} m, [[1]] nested, 'a'::ENUM('a', 'b') e, "
                  "TIMESTAMP_NS '2020-01-01' ns, '1'::BIT bit, [now()] tzs, uuid() u, interval 3 day i")
    rel, wires = project_for_wire(rel)
    row = rel.to_arrow_table().to_pylist()[0]
    for value, wire in zip(row.values(), wires):
        encode_text(wire.oid, value)
        encode_binary(wire.oid, value)
    assert json.loads(row["s"]) == {"x": 1} and row["e"] == "a"


def test_parameter_types_follow_casts():
    sql = ("select $1::oid[], $2::int, $3 :: double precision, $4::text[], $5::mytype, $6::timestamptz, "
           "$7::timestamp with time zone, $8::varchar(10), $9::INTEGER, $10")
    assert parameter_types(sql) == {1: 1028, 2: 23, 3: 701, 4: 1009, 6: 1184, 7: 1184, 8: 1043, 9: 23}


def test_text_array_literals():
    assert pg_array('{r,p,""}') == ["r", "p", ""]
    assert pg_array('{a,"b c",NULL,"q\\"x"}') == ["a", "b c", None, 'q"x']
    with pytest.raises(ValueError):
        pg_array("{{1},{2}}")


def test_catalog_rewrites_settings_and_array_literals():
    assert "dbrouter_current_setting('server_version_num')" in rewrite("select current_setting('server_version_num')")
    assert "dbrouter_set_config('jit', 'off', false)" in rewrite("select set_config('jit', 'off', false)")
    assert "ANY(['r', 'p', ''])" in rewrite("""select 1 where c.relkind = ANY('{r,p,""}')""")
    assert "ANY(['v'])" in rewrite("select 1 where c.relkind = ANY ('{v}'::\"char\"[])")
    assert rewrite("select (information_schema._pg_expandarray(i.indkey)).n") == "select (_pg_expandarray(i.indkey)).n"
    assert rewrite("select 'current_setting(x)'") == "select 'current_setting(x)'"  # a string stays


@pytest.mark.parametrize("select, names", [
    ("count(*), t.a, a + 1, 1", ("count", "a", "?column?", "?column?")),
    ("route_query($1), lower(b) AS lb, now(), coalesce(a, b)", ("route_query", "lb", "now", "coalesce")),
    ("CASE WHEN a THEN 1 END, EXISTS (SELECT 1), (SELECT max(z) FROM q), 1::int, 'x'::text",
     ("case", "exists", "max", "int4", "text")),
    ("*, count(*)", None),
])
def test_result_columns_get_postgres_names(select, names):
    con = duckdb.connect()
    tree = json.loads(con.execute("select json_serialize_sql(?)", [f"SELECT {select} FROM t"]).fetchone()[0])
    assert pg_column_names(tree["statements"][0]) == names


@pytest.mark.parametrize("literal, text", [
    ("TIMESTAMP '2026-11-27 04:48:20.67076'", "2026-11-27 04:48:20.67076"),
    ("TIMESTAMP '1969-12-31 23:59:59.5'", "1969-12-31 23:59:59.5"),
    ("TIMESTAMP '12000-01-01 00:00:00'", "12000-01-01 00:00:00"),
    ("'infinity'::timestamp", "infinity"), ("'-infinity'::timestamp", "-infinity"),
    ("TIMESTAMPTZ '2026-01-01 10:00:00+02'", "2026-01-01 08:00:00+00"),
    ("DATE '2000-02-29'", "2000-02-29"), ("DATE '1900-03-01'", "1900-03-01"), ("'-infinity'::date", "-infinity"),
])
def test_dates_and_timestamps_from_arrows_raw_integers(literal, text):
    """What the wire sends reads Arrow's raw days / microseconds: every DuckDB value, infinities and
    years past 9999 included, in Postgres's text form; the binary form reads back in psycopg."""
    import pyarrow as pa

    from dbrouter.serve.pgtypes import RAW_TEMPORAL

    column = duckdb.connect().sql(f"select {literal} as v").to_arrow_table().column(0)
    oid = 1082 if pa.types.is_date(column.type) else 1184 if column.type.tz else 1114
    assert oid in RAW_TEMPORAL
    raw = column.cast(pa.int32() if oid == 1082 else pa.int64()).to_pylist()[0]
    assert encode_text(oid, raw) == text
    if "infinity" not in text and not text.startswith("12000"):
        loaded = adapters.get_loader(oid, Format.BINARY)(oid).load(encode_binary(oid, raw))
        assert loaded == column.to_pylist()[0]
