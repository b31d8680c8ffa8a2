"""Schema-only sources (``type: schema_json``): databases described in JSON, without data.

A ``.jsonl`` file holds one database a line, a ``.json`` file one object or a list. A bad line
or object leaves that database out (an issue names ``file:line``); the others are read. SQL
cannot run on these databases: they have no rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from dbrouter.errors import SourceError
from dbrouter.query.results import QueryResult
from dbrouter.sources.base import (
    ColumnInfo,
    DatabaseSnapshot,
    ForeignKey,
    Issue,
    NoDataSource,
    ProgressFn,
    SourceSpec,
    TableInfo,
    Target,
    digest,
    label_of,
    parse_file_entry,
    utf8_error,
)


def _json_objects(path: Path) -> Iterable[tuple[int, Any, str | None]]:
    """(line or item number, object, error) per database in a ``.jsonl`` / ``.json`` file.

    A bad line of a ``.jsonl`` file (not JSON, not UTF-8) yields an error for that line only; a
    bad ``.json`` file yields one error.
    """
    data = path.read_bytes()
    if path.suffix == ".jsonl":
        for no, raw in enumerate(data.splitlines(), 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield no, None, f"line is not valid UTF-8 ({utf8_error(exc)}); save the file as UTF-8"
                continue
            if line.strip():
                try:
                    yield no, json.loads(line), None
                except json.JSONDecodeError as exc:
                    yield no, None, f"not valid JSON ({exc})"
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        yield 1, None, f"file is not valid UTF-8 ({utf8_error(exc)}); save it as UTF-8"
        return
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        yield 1, None, f"not valid JSON ({exc})"
        return
    for no, item in enumerate(obj if isinstance(obj, list) else [obj], 1):
        yield no, item, None


COLUMN_KINDS: tuple[tuple[str, type], ...] = (
    ("name", str), ("label", str), ("type", str), ("description", str), ("value_description", str),
    ("primary_key", bool), ("samples", list))
"""A column object's keys and the JSON type each holds when present, in the order read."""

_COLUMN_KEYS = tuple(key for key, _ in COLUMN_KINDS)
_COLUMN_OR_NONE = tuple((kind, type(None)) for _, kind in COLUMN_KINDS)


def _typed(obj: dict[str, Any], key: str, kinds: type | tuple[type, ...], where: str, db_id: str) -> Any:
    """``obj[key]`` when absent/None or of ``kinds``; otherwise the database is left out (SourceError)."""
    value = obj.get(key)
    if value is None or isinstance(value, kinds):
        return value
    names = " or ".join(k.__name__ for k in (kinds if isinstance(kinds, tuple) else (kinds,)))
    wanted = {"str": "a string", "list": "a list", "bool": "true or false", "dict": "an object"}.get(names, names)
    raise SourceError(db_id, f"{where}.{key} must be {wanted}, got {json.dumps(value)[:60]} "
                             f"({type(value).__name__}); fix the schema file")


def snapshot_from_json(obj: dict[str, Any], source_path: str, db_id: str | None = None) -> DatabaseSnapshot:
    """Build a snapshot from one ``databases.jsonl`` object (schema-only database).

    Args:
        obj: ``{db_id, tables: [{name, label, columns: [...]}], foreign_keys: [...]}``.
        source_path: file it came from (for messages).
        db_id: overrides ``obj['db_id']`` when given.

    Returns:
        The snapshot (no row counts, no samples).

    Raises:
        SourceError: the object has no db_id or no table list, or a value has the wrong JSON type
            (a name, label, type or description that is not a string, columns that are not a
            list, a primary_key that is not true/false, ...): the message gives its place.
    """
    given = db_id or obj.get("db_id")
    if not isinstance(given, str) or not given.strip() or not isinstance(obj.get("tables"), list):
        raise SourceError(str(given or "?"), f"{source_path}: schema object needs `db_id` (a string) and a `tables` list")
    db_id = given
    _typed(obj, "description", str, "database", db_id)
    _typed(obj, "foreign_keys", list, "database", db_id)
    snap = DatabaseSnapshot(db_id, "schema_json", source_path, obj.get("description"))
    for ti, t in enumerate(obj["tables"]):
        where = f"tables[{ti}]"
        if not isinstance(t, dict):
            raise SourceError(db_id, f"{where} must be an object with `name` and `columns`, got {json.dumps(t)[:60]}")
        for key in ("name", "label", "description"):
            _typed(t, key, str, where, db_id)
        _typed(t, "columns", list, where, db_id)
        if not t.get("name"):
            snap.issues.append(Issue(snap.db_id, None, "warning", f"{source_path}: table without a name skipped"))
            continue
        table = TableInfo(t["name"], t.get("label") or label_of(t["name"]), description=t.get("description"))
        for i, c in enumerate(t.get("columns") or [], 1):
            if not isinstance(c, dict):
                raise SourceError(db_id, f"{where}.columns[{i - 1}] must be an object with `name`, "
                                         f"got {json.dumps(c)[:60]}")
            got = tuple(map(c.get, _COLUMN_KEYS))
            # one test for the usual column (half a million at 10,000 databases, `map`s with no
            # Python frame per key); _typed, over the same table, names the fault
            if not all(map(isinstance, got, _COLUMN_OR_NONE)):
                cwhere = f"{where}.columns[{i - 1}]"
                for key, wanted in COLUMN_KINDS:
                    _typed(c, key, wanted, cwhere, db_id)
            name, label, kind, description, values, primary, samples = got
            if not name:
                snap.issues.append(Issue(snap.db_id, t["name"], "warning", "column without a name skipped"))
                continue
            table.columns.append(ColumnInfo(
                name, label or label_of(name), i, str(kind or "text").lower(), bool(primary),
                description or None, values or None,
                [str(v)[:60] for v in samples if v is not None][:5] if samples else []))
        snap.tables.append(table)
    for fk in obj.get("foreign_keys") or []:
        ends = [fk.get(k) for k in ("table", "column", "ref_table")] if isinstance(fk, dict) else [None]
        ref_column = fk.get("ref_column") if isinstance(fk, dict) else None
        if not all(isinstance(e, str) and e for e in ends) or not (ref_column is None or isinstance(ref_column, str)):
            snap.issues.append(Issue(snap.db_id, None, "warning",
                                     f"malformed foreign key {fk!r} skipped (needs strings table, column, "
                                     "ref_table and optionally ref_column)"))
            continue
        snap.foreign_keys.append(ForeignKey(*ends, ref_column or None))
    return snap


def schema_file_objects(spec: SourceSpec) -> list[tuple[int, Any, str | None]]:
    """The JSON objects of a schema-only source file (``.jsonl`` lines, or a ``.json`` object/list).

    Args:
        spec: the declared source.

    Returns:
        (line or item number, the object or None, the parse error or None) per object.

    Raises:
        SourceError: the file is missing or cannot be read.
    """
    path = Path(spec.path)
    if not path.is_file():
        raise SourceError(spec.id or path.stem, f"schema file {path} not found: fix `path` in the sources file")
    try:
        return list(_json_objects(path))
    except OSError as exc:
        raise SourceError(spec.id or path.stem, f"cannot read schema file {path}: {exc.strerror or exc}") from exc


def read_schema_json(spec: SourceSpec) -> tuple[list[DatabaseSnapshot], list[Issue]]:
    """Read a schema-only file (``.jsonl``: one database a line; ``.json``: object or list).

    Args:
        spec: the declared source.

    Returns:
        (snapshots of the well-formed databases, issues naming each bad line or object)

    Raises:
        SourceError: the file is missing, or ``id`` is given for a file holding several databases.
    """
    path = Path(spec.path)
    objects = schema_file_objects(spec)
    if spec.id and len(objects) > 1:
        raise SourceError(spec.id, f"{path} holds {len(objects)} databases; `id` only fits a single one")
    snaps: list[DatabaseSnapshot] = []
    issues: list[Issue] = []
    for no, obj, error in objects:
        where = f"{path}:{no}"
        if error:
            issues.append(Issue(spec.id or path.stem, where, "error", f"{error}; this database is left out"))
            continue
        try:
            snaps.append(snapshot_from_json(obj if isinstance(obj, dict) else {}, where, spec.id))
        except SourceError as exc:
            issues.append(Issue(exc.db_id, where, "error", f"{exc}; this database is left out"))
    return snaps, issues


def fingerprint_schema_json(spec: SourceSpec) -> tuple[dict[str, str], dict[str, str]]:
    """Hashes of the databases of a schema JSON file, each of its normalised object.

    Key order and whitespace do not count; any value does (a schema file has no rows, so its
    sample values are part of what it declares).

    Args:
        spec: the declared source.

    Returns:
        ``({db_id: hash}, {name: problem})``: a bad line or object is named ``file:line``.

    Raises:
        SourceError: the file is missing or cannot be read.
    """
    path = Path(spec.path)
    objects = schema_file_objects(spec)
    found: dict[str, str] = {}
    bad: dict[str, str] = {}
    for no, obj, error in objects:
        db_id = spec.id or (obj.get("db_id") if isinstance(obj, dict) else None)
        if error or not isinstance(db_id, str) or not db_id.strip():
            bad[f"{path.name}:{no}"] = error or "schema object needs `db_id` (a string)"
            continue
        found[db_id] = digest(["schema_json", obj])
    return found, bad



class SchemaJsonSource:
    """``type: schema_json`` (see :class:`dbrouter.sources.base.SourceType`)."""

    name: ClassVar[str] = "schema_json"

    def parse(self, entry: dict[str, Any], base: Path, where: str) -> list[SourceSpec]:
        """``path`` or ``glob``, ``id`` (a file of one database only), ``description``, ``exclude_tables``."""
        return parse_file_entry(self.name, entry, base, where)

    def read(self, spec: SourceSpec, n_samples: int, chars: int,
             progress: ProgressFn | None = None) -> tuple[list[DatabaseSnapshot], list[Issue]]:
        """Every well-formed database of the file (see :func:`read_schema_json`); samples as declared."""
        return read_schema_json(spec)

    def fingerprint(self, spec: SourceSpec) -> tuple[dict[str, str], dict[str, str]]:
        """Each database's normalised object (see :func:`fingerprint_schema_json`)."""
        return fingerprint_schema_json(spec)

    def target(self, db_id: str, source_path: str) -> Target:
        """Never: a schema file has no rows.

        Raises:
            NoDataSource: always, naming what to ingest instead.
        """
        raise NoDataSource(f"database {db_id!r} was ingested from a schema file ({source_path}) without data, so "
                           "SQL cannot run on it: ingest it from its real SQLite or DuckDB database (its `path` in "
                           "the sources file) and build again")

    def run(self, target: Target, sql: str, timeout: float, row_cap: int) -> QueryResult:
        """Never (see :meth:`target`).

        Raises:
            NoDataSource: always.
        """
        raise NoDataSource(f"cannot run SQL on database {target.db_id!r}: a schema file has no rows")
