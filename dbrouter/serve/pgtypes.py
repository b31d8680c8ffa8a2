"""Postgres types for DuckDB's, on the wire and in the catalog: one table, read everywhere else.

A client learns a column's type from the OID in RowDescription, and a BI tool reading the catalog
(pgjdbc's ``getColumns``, SQLAlchemy's inspector, psql's ``\\d``) learns it from
``pg_attribute.atttypid`` joined to ``pg_type``. Both come from here, so they agree:

- :data:`BASE_TYPES` (and their array types, :data:`TYPES`): Postgres's own OIDs, names, lengths;
- :func:`wire_type`: the Postgres type a DuckDB column is sent as (and the DuckDB expression that
  first turns a type Postgres has no form for into one it has: a STRUCT or MAP becomes ``json``);
- :func:`encode_text` / :func:`encode_binary`: a value in Postgres's text form (``t``,
  ``2026-11-27 04:48:20.5+00``, ``{a,"b c"}``) or binary form (what psycopg's ``binary=True``,
  asyncpg and pgjdbc's binary transfer ask for), for every type the table holds;
- :func:`decode_binary`: a parameter a client bound in binary form;
- :func:`pg_type_rows`, :func:`oid_macro_sql`, :func:`typmod_macro_sql`: the catalog's rows and
  the macros mapping DuckDB's type names to OIDs (see :mod:`dbrouter.serve.catalog`).
"""

from __future__ import annotations

import datetime as dt
import re
import struct
import uuid
from dataclasses import dataclass
from decimal import Decimal, localcontext
from typing import Any


@dataclass(frozen=True)
class PgType:
    """One row of ``pg_type``.

    Attributes:
        oid: Postgres's OID of the type.
        name: ``typname`` (``int4``, ``_int4`` for its array).
        sql_name: what ``format_type`` says (``integer``, ``integer[]``).
        length: ``typlen`` (-1 variable, -2 C string).
        category: ``typcategory`` (N numeric, S string, D date/time, A array...).
        array: the OID of its array type (0: none).
        element: for an array type, the OID of its element (0 otherwise).
        kind: ``typtype`` (b base, p pseudo).
    """

    oid: int
    name: str
    sql_name: str
    length: int
    category: str
    array: int = 0
    element: int = 0
    kind: str = "b"


BASE_TYPES: tuple[PgType, ...] = (
    PgType(16, "bool", "boolean", 1, "B", 1000),
    PgType(17, "bytea", "bytea", -1, "U", 1001),
    PgType(18, "char", '"char"', 1, "Z", 1002),
    PgType(19, "name", "name", 64, "S", 1003),
    PgType(20, "int8", "bigint", 8, "N", 1016),
    PgType(21, "int2", "smallint", 2, "N", 1005),
    PgType(22, "int2vector", "int2vector", -1, "A", 1006, 21),
    PgType(23, "int4", "integer", 4, "N", 1007),
    PgType(24, "regproc", "regproc", 4, "N", 1008),
    PgType(25, "text", "text", -1, "S", 1009),
    PgType(26, "oid", "oid", 4, "N", 1028),
    PgType(30, "oidvector", "oidvector", -1, "A", 1013, 26),
    PgType(114, "json", "json", -1, "U", 199),
    PgType(700, "float4", "real", 4, "N", 1021),
    PgType(701, "float8", "double precision", 8, "N", 1022),
    PgType(705, "unknown", "unknown", -2, "X", 0, 0, "p"),
    PgType(1042, "bpchar", "character", -1, "S", 1014),
    PgType(1043, "varchar", "character varying", -1, "S", 1015),
    PgType(1082, "date", "date", 4, "D", 1182),
    PgType(1083, "time", "time without time zone", 8, "D", 1183),
    PgType(1114, "timestamp", "timestamp without time zone", 8, "D", 1115),
    PgType(1184, "timestamptz", "timestamp with time zone", 8, "D", 1185),
    PgType(1186, "interval", "interval", 16, "T", 1187),
    PgType(1266, "timetz", "time with time zone", 12, "D", 1270),
    PgType(1560, "bit", "bit", -1, "V", 1561),
    PgType(1562, "varbit", "bit varying", -1, "V", 1563),
    PgType(1700, "numeric", "numeric", -1, "N", 1231),
    PgType(2205, "regclass", "regclass", 4, "N", 2210),
    PgType(2206, "regtype", "regtype", 4, "N", 2211),
    PgType(2249, "record", "record", -1, "P", 2287, 0, "p"),
    PgType(2276, "any", '"any"', 4, "P", 0, 0, "p"),
    PgType(2277, "anyarray", "anyarray", -1, "P", 0, 0, "p"),
    PgType(2278, "void", "void", 4, "P", 0, 0, "p"),
    PgType(2950, "uuid", "uuid", 16, "U", 2951),
    PgType(3802, "jsonb", "jsonb", -1, "U", 3807),
)
"""The Postgres types the endpoint sends or names in its catalog (OIDs of ``pg_type.dat``)."""

TYPES: dict[int, PgType] = {t.oid: t for t in BASE_TYPES}
TYPES.update({t.array: PgType(t.array, f"_{t.name}", f"{t.sql_name}[]", -1, "A", 0, t.oid)
              for t in BASE_TYPES if t.array})
"""Every type by OID: the base types and their array types (``_int4``, element 23)."""

BY_NAME: dict[str, PgType] = {t.name: t for t in TYPES.values()}

TEXT, VARCHAR, JSON, NUMERIC = 25, 1043, 114, 1700

_DUCK_SCALARS: dict[str, int] = {
    "BOOLEAN": 16, "TINYINT": 21, "SMALLINT": 21, "UTINYINT": 21, "INTEGER": 23, "USMALLINT": 23,
    "BIGINT": 20, "UINTEGER": 26, "UBIGINT": NUMERIC, "HUGEINT": NUMERIC, "UHUGEINT": NUMERIC,
    "FLOAT": 700, "DOUBLE": 701, "VARCHAR": TEXT, "JSON": JSON, "BLOB": 17, "DATE": 1082, "TIME": 1083,
    "TIMESTAMP": 1114, "TIMESTAMP WITH TIME ZONE": 1184, "INTERVAL": 1186, "UUID": 2950,
}
"""DuckDB's scalar types Postgres has a form for, by DuckDB's name, and the OID each is sent as.

VARCHAR is ``text`` (DuckDB's strings have no length limit; ``text[]`` is also the one string array
asyncpg reads without asking the catalog), UINTEGER is ``oid`` (Postgres's one unsigned 4-byte
integer: the catalog's OID columns are UINTEGER, so ``array_agg(atttypid)`` is ``oid[]`` as in
Postgres)."""

_RETYPED: dict[str, tuple[str, int]] = {
    "TIMESTAMP_S": ("CAST({} AS TIMESTAMP)", 1114), "TIMESTAMP_MS": ("CAST({} AS TIMESTAMP)", 1114),
    "TIMESTAMP_NS": ("CAST({} AS TIMESTAMP)", 1114),
    "TIMESTAMP WITH TIME ZONE_NS": ("CAST({} AS TIMESTAMPTZ)", 1184),
    "TIME WITH TIME ZONE": ("CAST({} AS VARCHAR)", TEXT), "BIT": ("CAST({} AS VARCHAR)", TEXT),
    "BIGNUM": ("CAST({} AS VARCHAR)", NUMERIC), "VARINT": ("CAST({} AS VARCHAR)", NUMERIC),
}
"""DuckDB types sent after a cast in DuckDB (to the form the Postgres OID's encoder takes)."""

_DECIMAL = re.compile(r"^DECIMAL\((\d+),\s*(\d+)\)$")
_LIST = re.compile(r"^(.*)\[(\d*)\]$")


@dataclass(frozen=True)
class WireType:
    """How one result column goes to the client.

    Attributes:
        oid: the Postgres type OID announced in RowDescription.
        typmod: its type modifier (``numeric(p,s)``: ``((p << 16) | s) + 4``; -1 none).
        cast: a DuckDB expression template (``{}`` the quoted column) applied before sending, or None.
    """

    oid: int
    typmod: int = -1
    cast: str | None = None


def wire_type(duck: str) -> WireType:
    """The Postgres type a DuckDB column of type ``duck`` (``str(DuckDBPyType)``) is sent as.

    Scalars map by :data:`_DUCK_SCALARS`; ``DECIMAL(p,s)`` is ``numeric(p,s)``; a list or array of a
    scalar is that scalar's array type; STRUCT, MAP, UNION and lists of them are ``json``; ENUM and
    anything else is sent as text (DuckDB's own text form).
    """
    name = duck.strip()
    if name in _DUCK_SCALARS:
        return WireType(_DUCK_SCALARS[name])
    if name in _RETYPED:
        cast, oid = _RETYPED[name]
        return WireType(oid, -1, cast)
    if match := _DECIMAL.match(name):
        return WireType(NUMERIC, (int(match.group(1)) << 16 | int(match.group(2))) + 4)
    if match := _LIST.match(name):
        element = wire_type(match.group(1))
        array = TYPES[element.oid].array if element.oid in TYPES and not element.cast else 0
        if array and TYPES[element.oid].category != "A":
            return WireType(array)
        return WireType(JSON, -1, "to_json({})")
    if name.startswith(("STRUCT", "MAP", "UNION")):
        return WireType(JSON, -1, "to_json({})")
    return WireType(TEXT, -1, "CAST({} AS VARCHAR)")


_ALIASES = {"int": 23, "integer": 23, "int4": 23, "bigint": 20, "smallint": 21, "float": 701, "double precision": 701,
            "real": 700, "boolean": 16, "decimal": NUMERIC, "character varying": VARCHAR, "string": TEXT,
            "timestamp with time zone": 1184, "timestamp without time zone": 1114, "hugeint": NUMERIC}
_CAST_PARAM = re.compile(r"\$(\d+)\s*::\s*(double\s+precision|character\s+varying|timestamp\s+with(?:out)?\s+time\s+zone"
                         r"|\"?[A-Za-z_][A-Za-z0-9_]*\"?)\s*(\[\s*\])?", re.IGNORECASE)


def type_oid(name: str) -> int | None:
    """The OID of a type named as Postgres (``int``, ``double precision``, ``text``) or DuckDB
    (``INTEGER``, ``DOUBLE``) names it, or None when it is neither's."""
    lower = name.strip().lower()
    if lower in _ALIASES:
        return _ALIASES[lower]
    if lower in BY_NAME:
        return BY_NAME[lower].oid
    wire = wire_type(name.strip().upper())
    return None if wire.cast else wire.oid


def parameter_types(sql: str) -> dict[int, int]:
    """The type OIDs a statement's casts give its parameters (``$1::int`` -> {1: 23}), as Postgres
    infers them: what a client that encodes by the announced type (asyncpg) is told to send.

    Args:
        sql: the statement as the client wrote it.

    Returns:
        Parameter number -> type OID, for the parameters written with a cast to a known type.
    """
    out: dict[int, int] = {}
    for number, name, array in _CAST_PARAM.findall(sql):
        oid = type_oid(" ".join(name.strip('"').split()))  # `double  precision` is `double precision`
        if oid is None:
            continue
        oid = TYPES[oid].array if array else oid
        if oid:
            out.setdefault(int(number), oid)
    return out


# -- text form


def _fraction(text: str) -> str:
    """``12:00:00.500000`` -> ``12:00:00.5``, ``12:00:00.000000`` -> ``12:00:00`` (Postgres's output)."""
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _float_text(value: float, single: bool) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if single:  # the shortest text that reads back as the same float4 (Postgres's float4out)
        packed = struct.pack("!f", value)
        for digits in range(1, 10):
            text = f"{value:.{digits}g}"
            if struct.pack("!f", float(text)) == packed:
                break
    else:
        text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def _interval_text(value) -> str:
    months, days, nanos = _interval_parts(value)
    parts = []
    years = int(months / 12)  # toward zero, as Postgres prints -14 months: -1 years -2 mons
    months -= years * 12
    for amount, unit in ((years, "year"), (months, "mon"), (days, "day")):
        if amount:
            parts.append(f"{amount} {unit}{'' if amount == 1 else 's'}")  # Postgres: -1 years
    micros = nanos // 1000
    if micros or not parts:
        parts.append(("-" if micros < 0 else "") + _clock(abs(micros)))
    return " ".join(parts)


def _clock(micros: int) -> str:
    """``HH:MM:SS[.ffffff]`` of a non-negative count of microseconds, trailing zeros of the
    fraction dropped as Postgres prints them (hours past 24 for an interval)."""
    seconds, fraction = divmod(micros, 1_000_000)
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" + \
        (f".{fraction:06d}".rstrip("0") if fraction else "")


def _interval_parts(value) -> tuple[int, int, int]:
    """(months, days, nanoseconds) of an Arrow MonthDayNano or a ``timedelta``."""
    if isinstance(value, dt.timedelta):
        return 0, value.days, (value.seconds * 1_000_000 + value.microseconds) * 1000
    return int(value.months), int(value.days), int(value.nanoseconds)


def _utc(value: dt.datetime) -> dt.datetime:
    return value.astimezone(dt.UTC) if value.tzinfo else value.replace(tzinfo=dt.UTC)


_NEEDS_QUOTES = re.compile(r'[{},"\\\s]')


def _array_element(text: str) -> str:
    """An array element in Postgres's text form: quoted when empty, ``NULL`` or holding a delimiter."""
    if text == "" or text.upper() == "NULL" or _NEEDS_QUOTES.search(text):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


DATE_INFINITY = 2**31 - 1
"""DuckDB's ``'infinity'::date`` as Arrow's days since 1970 (``-infinity`` is its negative)."""
TIMESTAMP_INFINITY = 2**63 - 1
"""DuckDB's ``'infinity'::timestamp`` as Arrow's microseconds since 1970 (``-infinity``: its negative)."""
_EPOCH_SHIFT_DAYS = 10_957  # 1970-01-01 -> 2000-01-01, Postgres's epoch
_UNIX_EPOCH = dt.datetime(1970, 1, 1)


def _raw_text(oid: int, value: int) -> str:
    """A date (days since 1970) or timestamp (microseconds since 1970) given as Arrow's raw integer."""
    infinity = DATE_INFINITY if oid == 1082 else TIMESTAMP_INFINITY
    if abs(value) == infinity:
        return "infinity" if value > 0 else "-infinity"
    if oid == 1082:
        return _civil_text(value)
    days, micros = divmod(value, 86_400_000_000)
    date = _civil_text(days)
    bc = date.endswith(" BC")
    return f"{date.removesuffix(' BC')} {_clock(micros)}{'+00' if oid == 1184 else ''}{' BC' if bc else ''}"


def _civil_text(days: int) -> str:
    """``YYYY-MM-DD`` of a day count since 1970-01-01 in the proleptic Gregorian calendar, for any
    year (Python's ``date`` stops at 9999; DuckDB's do not): year 0 and before as Postgres prints
    them, ``0044-03-15 BC``. (Howard Hinnant's ``civil_from_days``.)"""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (month <= 2)
    if year <= 0:
        return f"{1 - year:04d}-{month:02d}-{day:02d} BC"
    return f"{year:04d}-{month:02d}-{day:02d}"


def _raw_binary(oid: int, value: int) -> bytes:
    """Postgres's binary date or timestamp from Arrow's raw integer (infinities as Postgres's)."""
    if oid == 1082:
        if abs(value) == DATE_INFINITY:
            return struct.pack("!i", 2**31 - 1 if value > 0 else -(2**31))
        return struct.pack("!i", value - _EPOCH_SHIFT_DAYS)
    if abs(value) == TIMESTAMP_INFINITY:
        return struct.pack("!q", 2**63 - 1 if value > 0 else -(2**63))
    return struct.pack("!q", value - _EPOCH_SHIFT_DAYS * 86_400_000_000)


RAW_TEMPORAL = frozenset({1082, 1114, 1184})
"""Types whose values :mod:`dbrouter.serve.wire` reads as Arrow's raw integers (so ``infinity``,
which no Python ``datetime`` holds, is sent as Postgres sends it)."""


def encode_text(oid: int, value: Any) -> str:
    """``value`` (as Arrow's ``as_py`` gives it; for a date or timestamp also Arrow's raw integer) in
    Postgres's text output form for type ``oid``."""
    if oid in RAW_TEMPORAL and isinstance(value, int):
        return _raw_text(oid, value)
    pg = TYPES.get(oid)
    if pg is not None and pg.element:
        return "{" + ",".join("NULL" if v is None else _array_element(encode_text(pg.element, v)) for v in value) + "}"
    if oid == 16:
        return "t" if value else "f"
    if oid in (700, 701):
        return _float_text(float(value), oid == 700)
    if oid == NUMERIC:
        return format(value, "f") if isinstance(value, Decimal) else str(value)
    if oid == 17:
        return "\\x" + bytes(value).hex()
    if oid == 1083 and isinstance(value, dt.time):
        return _fraction(value.isoformat())
    if oid in (1114, 1184) and isinstance(value, dt.datetime):
        if oid == 1184:
            return _fraction(_utc(value).replace(tzinfo=None).isoformat(sep=" ")) + "+00"
        return _fraction(value.replace(tzinfo=None).isoformat(sep=" "))
    if oid == 1082 and isinstance(value, dt.date):
        return value.isoformat()
    if oid == 1186:
        return _interval_text(value)
    return value if isinstance(value, str) else str(value)


# -- binary form

_PG_EPOCH = dt.datetime(2000, 1, 1)
_PG_EPOCH_DATE = dt.date(2000, 1, 1).toordinal()
_FIXED = {16: "!?", 20: "!q", 21: "!h", 23: "!i", 26: "!I", 700: "!f", 701: "!d"}


def _micros(value: dt.datetime) -> int:
    delta = value - _PG_EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _numeric_binary(value) -> bytes:
    """Postgres's binary numeric: ndigits, weight, sign, dscale, then base-10000 digits."""
    number = value if isinstance(value, Decimal) else Decimal(str(value))
    if number.is_nan():
        return struct.pack("!hhHh", 0, 0, 0xC000, 0)
    if number.is_infinite():
        return struct.pack("!hhHh", 0, 0, 0xD000 if number > 0 else 0xF000, 0)
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    dscale = max(0, -exponent)
    text = "".join(map(str, digits)) or "0"
    if exponent > 0:
        text += "0" * exponent
        exponent = 0
    text = "0" * max(0, -exponent - len(text)) + text  # 0.0001: the fraction's leading zeros
    integer, fraction = (text[:len(text) + exponent], text[len(text) + exponent:]) if exponent else (text, "")
    integer = integer.lstrip("0")
    integer = "0" * (-len(integer) % 4) + integer
    fraction = fraction + "0" * (-len(fraction) % 4)
    groups = [int(integer[i:i + 4]) for i in range(0, len(integer), 4)] + \
             [int(fraction[i:i + 4]) for i in range(0, len(fraction), 4)]
    weight = len(integer) // 4 - 1
    while groups and groups[0] == 0:  # leading zero groups
        groups.pop(0)
        weight -= 1
    while groups and groups[-1] == 0:
        groups.pop()
    if not groups:
        weight = 0
    return struct.pack(f"!hhHh{len(groups)}H", len(groups), weight, 0x4000 if sign else 0, dscale, *groups)


def encode_binary(oid: int, value: Any) -> bytes:
    """``value`` in Postgres's binary form for type ``oid`` (what a client asked for with format 1).

    Raises:
        ValueError: a type with no binary form here (never one :func:`wire_type` gives).
    """
    if oid in RAW_TEMPORAL and isinstance(value, int):
        return _raw_binary(oid, value)
    pg = TYPES.get(oid)
    if pg is not None and pg.element:
        element = pg.element
        body = bytearray()
        has_null = 0
        for item in value:
            if item is None:
                has_null = 1
                body += struct.pack("!i", -1)
            else:
                encoded = encode_binary(element, item)
                body += struct.pack("!i", len(encoded)) + encoded
        if not value:
            return struct.pack("!iii", 0, 0, element)
        return struct.pack("!iiiii", 1, has_null, element, len(value), 1) + bytes(body)
    if oid in _FIXED:
        return struct.pack(_FIXED[oid], value)
    if oid == NUMERIC:
        return _numeric_binary(value)
    if oid == 17:
        return bytes(value)
    if oid == 1082:
        return struct.pack("!i", value.toordinal() - _PG_EPOCH_DATE)
    if oid == 1083:
        return struct.pack("!q", ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond)
    if oid == 1114:
        return struct.pack("!q", _micros(value.replace(tzinfo=None)))
    if oid == 1184:
        return struct.pack("!q", _micros(_utc(value).replace(tzinfo=None)))
    if oid == 1186:
        months, days, nanos = _interval_parts(value)
        return struct.pack("!qii", nanos // 1000, days, months)
    if oid == 2950:
        return uuid.UUID(str(value)).bytes
    if oid in (25, 1043, 114, 19, 1042, 705, 1266, 1562, 1560, 18):
        return (value if isinstance(value, str) else encode_text(oid, value)).encode("utf-8")
    raise ValueError(f"no binary form for type OID {oid}")


# -- binary parameters


def _numeric_from_binary(raw: bytes) -> Decimal:
    ndigits, weight, sign, dscale = struct.unpack("!hhHh", raw[:8])
    if sign == 0xC000:
        return Decimal("NaN")
    if sign in (0xD000, 0xF000):
        return Decimal("Infinity") if sign == 0xD000 else Decimal("-Infinity")
    groups = struct.unpack(f"!{ndigits}H", raw[8:8 + 2 * ndigits])
    with localcontext() as context:
        context.prec = 4 * (abs(weight) + ndigits) + dscale + 8  # exact: Postgres's numeric has no rounding here
        number = sum((Decimal(g) * Decimal(10000) ** (weight - i) for i, g in enumerate(groups)), Decimal(0))
        number = number.quantize(Decimal(1).scaleb(-dscale)) if dscale else number.to_integral_value()
        return -number if sign == 0x4000 else number


def decode_binary(oid: int, raw: bytes) -> Any:
    """A parameter bound in binary form, as the Python value DuckDB binds.

    Raises:
        ValueError: a type with no binary reader here (the message names it).
    """
    pg = TYPES.get(oid)
    if pg is not None and pg.element:
        ndim, _has_null, element = struct.unpack("!iii", raw[:12])
        if ndim == 0:
            return []
        if ndim != 1:
            raise ValueError(f"a {ndim}-dimensional array parameter; send a one-dimensional array")
        count, _lower = struct.unpack("!ii", raw[12:20])
        out, pos = [], 20
        for _ in range(count):
            (size,) = struct.unpack("!i", raw[pos:pos + 4])
            pos += 4
            if size < 0:
                out.append(None)
            else:
                out.append(decode_binary(element, raw[pos:pos + size]))
                pos += size
        return out
    if oid in _FIXED:
        return struct.unpack(_FIXED[oid], raw)[0]
    if oid == NUMERIC:
        return _numeric_from_binary(raw)
    if oid in (25, 1043, 114, 19, 1042, 705, 0):
        return raw.decode("utf-8")
    if oid == 3802:  # jsonb: a version byte, then the text
        return raw[1:].decode("utf-8")
    if oid == 17:
        return bytes(raw)
    if oid == 1082:
        return dt.date.fromordinal(struct.unpack("!i", raw)[0] + _PG_EPOCH_DATE)
    if oid == 1083:
        micros = struct.unpack("!q", raw)[0]
        seconds, micro = divmod(micros, 1_000_000)
        return dt.time(seconds // 3600, seconds // 60 % 60, seconds % 60, micro)
    if oid in (1114, 1184):
        value = _PG_EPOCH + dt.timedelta(microseconds=struct.unpack("!q", raw)[0])
        return value.replace(tzinfo=dt.UTC) if oid == 1184 else value
    if oid == 1186:
        micros, days, months = struct.unpack("!qii", raw)
        if months:
            raise ValueError("an interval parameter with months; send it as text")
        return dt.timedelta(days=days, microseconds=micros)
    if oid == 2950:
        return uuid.UUID(bytes=raw)
    raise ValueError(f"no binary reader for type OID {oid}")


# -- text arrays

TEXT_ARRAYS = {1009: str, 1015: str, 1002: str, 1003: str, 1000: lambda v: v.lower() in ("t", "true"), 1005: int,
               1007: int, 1016: int, 1021: float, 1022: float, 1028: int}
"""Array types whose text literal a parameter may be (text[], varchar[], bool[], int[], float[]...),
with each element's reader."""

_ELEMENT = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([^,]*?))\s*(?:,|$)')


def pg_array(text: str, element=str) -> list:
    """A one-dimensional Postgres array literal (``{a,"b c",NULL}``) as a list (what psycopg sends
    for a Python list, e.g. pgcli's ``relkind = ANY(%s)``).

    Raises:
        ValueError: not a one-dimensional array literal.
    """
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")) or body[1:2] == "{":
        raise ValueError(f"array {text[:60]!r} is not a one-dimensional array literal")
    body, out = body[1:-1], []
    if not body.strip():
        return out
    for match in _ELEMENT.finditer(body):
        if match.end() == match.start():
            break
        quoted, plain = match.group(1), match.group(2)
        if quoted is not None:
            out.append(element(re.sub(r"\\(.)", r"\1", quoted)))
        else:
            out.append(None if plain.upper() == "NULL" else element(plain))
        if match.end() >= len(body):
            break
    return out


# -- the catalog


def pg_type_rows(namespace: int) -> str:
    """A ``SELECT`` of every type of :data:`TYPES` as ``pg_type`` rows (the columns Postgres has)."""
    rows = []
    for t in sorted(TYPES.values(), key=lambda t: t.oid):
        input_fn = "array_in" if t.element else f"{t.name}in"
        byval = t.length in (1, 2, 4, 8)
        rows.append(f"({t.oid}, '{t.name}', {t.length}, {str(byval).lower()}, '{t.kind}', '{t.category}', "
                    f"{t.element}, {t.array}, 'pg_catalog.{input_fn}', '{t.sql_name.replace(chr(39), chr(39) * 2)}')")
    return (
        "SELECT CAST(oid AS UINTEGER) AS oid, typname, CAST(" + str(namespace) + " AS UINTEGER) AS typnamespace, 10 AS typowner, typlen, typbyval, typtype, "
        "typcategory, false AS typispreferred, true AS typisdefined, ',' AS typdelim, 0 AS typrelid, "
        "'-' AS typsubscript, CAST(typelem AS UINTEGER) AS typelem, CAST(typarray AS UINTEGER) AS typarray, typinput, replace(typinput, 'in', 'out') AS typoutput, "
        "replace(typinput, 'in', 'recv') AS typreceive, replace(typinput, 'in', 'send') AS typsend, "
        "'-' AS typmodin, '-' AS typmodout, '-' AS typanalyze, 'i' AS typalign, 'p' AS typstorage, "
        "false AS typnotnull, 0 AS typbasetype, -1 AS typtypmod, CASE WHEN typelem > 0 THEN 1 ELSE 0 END AS typndims, "
        "0 AS typcollation, CAST(NULL AS VARCHAR) AS typdefaultbin, CAST(NULL AS VARCHAR) AS typdefault, "
        "CAST(NULL AS VARCHAR[]) AS typacl, sql_name AS dbrouter_sql_name FROM (VALUES " + ", ".join(rows) + ") "
        "AS t(oid, typname, typlen, typbyval, typtype, typcategory, typelem, typarray, typinput, sql_name)")


def oid_macro_sql() -> str:
    """A DuckDB macro body ``(dt)``: the OID :func:`wire_type` sends a column of DuckDB type name ``dt`` as."""
    scalars = ", ".join(f"'{k}': {v}" for k, v in {**_DUCK_SCALARS, **{k: v for k, (_, v) in _RETYPED.items()}}.items())
    arrays = ", ".join(f"'{k}': {TYPES[v].array}" for k, v in _DUCK_SCALARS.items() if TYPES[v].array)
    return (f"coalesce(MAP {{{scalars}}}[dt], CASE WHEN dt LIKE 'DECIMAL(%' THEN {NUMERIC} "
            f"WHEN regexp_matches(dt, '^[A-Z ]+\\[\\d*\\]$') THEN coalesce(MAP {{{arrays}}}"
            f"[regexp_extract(dt, '^(.*)\\[\\d*\\]$', 1)], {JSON}) "
            f"WHEN dt LIKE 'STRUCT%' OR dt LIKE 'MAP%' OR dt LIKE 'UNION%' OR dt LIKE '%[]' THEN {JSON} "
            f"ELSE {TEXT} END)")


def typmod_macro_sql() -> str:
    """A DuckDB macro body ``(dt)``: the type modifier of DuckDB type name ``dt`` (``numeric(p,s)``'s)."""
    return ("CASE WHEN dt LIKE 'DECIMAL(%' THEN "
            "(CAST(regexp_extract(dt, '^DECIMAL\\((\\d+),', 1) AS INTEGER) << 16 | "
            "CAST(regexp_extract(dt, ',\\s*(\\d+)\\)$', 1) AS INTEGER)) + 4 ELSE -1 END")
