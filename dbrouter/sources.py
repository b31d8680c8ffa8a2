"""The sources file: the one place where a user declares the databases to route among.

Format (YAML; relative paths are relative to the file)::

    sample_values: 5          # distinct sample values kept per column (0 disables)
    sample_value_chars: 60    # each sample value is cut to this many characters
    databases:
      - {type: sqlite, path: databases/concert_singer.sqlite}       # id defaults to the file stem
      - {type: sqlite, glob: "databases/*.sqlite"}                  # many at once
      - {type: duckdb, path: warehouse/sales.duckdb, id: sales}
      - {type: schema_json, path: schemas/hr.jsonl}                 # one database a line
      - {type: sqlite, path: legacy.sqlite, exclude_tables: [tmp_import]}  # tables left out
      - {type: snowflake, id: sales, database: SALES, schemas: [PUBLIC],     # a Snowflake database;
         role: DBROUTER_READER, warehouse: XS}                              # secret from $SNOWFLAKE_PASSWORD
      - {type: url, url: "postgresql+psycopg://reader:${PG_PASSWORD}@db.internal:5432/shop",
         schemas: [sales, hr], exclude_tables: ["*_tmp"]}                   # any SQLAlchemy dialect
    examples:   [{path: examples.jsonl}]      # optional {db_id, question, sql} lines
    statements: [{path: statements.jsonl}]    # optional {db_id, statement} lines
"""

from __future__ import annotations

import glob as globlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dbrouter.errors import SourcesConfigError

SOURCE_TYPES = ("sqlite", "duckdb", "schema_json", "snowflake", "url")
URL_SETTINGS = ("url", "id", "description", "databases", "schemas", "exclude_schemas", "include_tables",
                "exclude_tables", "per_schema")
# Settings of a `type: snowflake` entry (no secrets: those come from the environment variables
# named by the *_env settings; see dbrouter.snowflake_source).
SNOWFLAKE_SETTINGS = ("database", "schemas", "account", "user", "role", "warehouse", "host", "port", "protocol",
                      "password_env", "private_key_path_env", "private_key_passphrase_env")
SNOWFLAKE_SECRETS = ("password", "private_key", "private_key_path", "private_key_passphrase", "token")


@dataclass(frozen=True)
class ServerSource:
    """One `type: url` entry of the sources file.

    Attributes:
        url: SQLAlchemy URL as written, possibly with ``${ENV}`` references.
        id: database id (default: the URL's database name); with several ``databases`` or
            ``per_schema``, the ids are ``<id>_<name>`` (or the names when ``id`` is unset).
        databases: read these databases of the server instead of the URL's one.
        schemas: schemas to read (default: the connection's default schema).
        exclude_schemas: schemas left out (glob patterns).
        include_tables / exclude_tables: glob patterns over ``table`` or ``schema.table``.
        per_schema: one knowledge-base database per schema instead of one per database.
        description: description of the database(s).
    """

    url: str
    id: str | None = None
    databases: tuple[str, ...] = ()
    schemas: tuple[str, ...] = ()
    exclude_schemas: tuple[str, ...] = ()
    include_tables: tuple[str, ...] = ()
    exclude_tables: tuple[str, ...] = ()
    per_schema: bool = False
    description: str | None = None
    env: dict[str, str] | None = field(default=None, compare=False, repr=False)  # tests: instead of os.environ


@dataclass(frozen=True)
class SourceSpec:
    """One declared source file (a database, or for schema_json possibly several)."""

    type: str
    path: Path
    id: str | None = None
    description: str | None = None
    exclude_tables: tuple[str, ...] = ()
    snowflake: tuple[tuple[str, Any], ...] = ()  # type snowflake: its settings (no secrets)
    server: ServerSource | None = None  # type url: the server source


@dataclass
class SourcesConfig:
    """The parsed sources file."""

    databases: list[SourceSpec]
    examples: list[Path] = field(default_factory=list)
    statements: list[Path] = field(default_factory=list)
    sample_values: int = 5
    sample_value_chars: int = 60
    origin: Path | None = None


def _text(entry: dict[str, Any], key: str, where: str, required: bool = False) -> str | None:
    """``entry[key]`` as a non-empty string, None when absent (and not required)."""
    value = entry.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise SourcesConfigError(f"{where}: `{key}` must be a non-empty string, got {value!r}")
    return value


def _expand(entry: dict[str, Any], base: Path, where: str) -> list[SourceSpec]:
    kind = entry.get("type")
    if not isinstance(kind, str) or kind not in SOURCE_TYPES:
        raise SourcesConfigError(f"{where}: type must be one of {', '.join(SOURCE_TYPES)}, got {kind!r}")
    if kind == "snowflake":
        return [_snowflake_spec(entry, where)]
    if kind == "url":
        return [_url_spec(entry, where)]
    if ("path" in entry) == ("glob" in entry):
        raise SourcesConfigError(f"{where}: give exactly one of `path` or `glob`")
    description = _text(entry, "description", where)
    db_id = _text(entry, "id", where)
    exclude = entry.get("exclude_tables") or []
    if not isinstance(exclude, list) or not all(isinstance(t, str) and t for t in exclude):
        raise SourcesConfigError(f"{where}: `exclude_tables` must be a list of table names, got {exclude!r}")
    exclude = tuple(exclude)
    if "glob" in entry:
        pattern = _text(entry, "glob", where, required=True)
        if db_id:
            raise SourcesConfigError(f"{where}: `id` cannot be used with `glob` (ids come from file names)")
        paths = sorted(Path(p) for p in globlib.glob(str(base / pattern)))
        if not paths:
            raise SourcesConfigError(f"{where}: glob {pattern!r} matched no file under {base}")
        return [SourceSpec(kind, p, None, description, exclude) for p in paths]
    return [SourceSpec(kind, base / _text(entry, "path", where, required=True), db_id, description, exclude)]


def _snowflake_spec(entry: dict[str, Any], where: str) -> SourceSpec:
    """A ``type: snowflake`` entry: ``id`` and ``database`` required, secrets refused."""
    secrets = [k for k in SNOWFLAKE_SECRETS if k in entry]
    if secrets:
        raise SourcesConfigError(f"{where}: `{secrets[0]}` must not be written in the sources file: put the secret in "
                                 "an environment variable and name it with `password_env` / `private_key_path_env`")
    unknown = sorted(set(entry) - set(SNOWFLAKE_SETTINGS) - {"type", "id", "description", "exclude_tables"})
    if unknown:
        raise SourcesConfigError(f"{where}: unknown Snowflake setting(s) {', '.join(unknown)}; "
                                 f"known: {', '.join(SNOWFLAKE_SETTINGS)}")
    db_id = _text(entry, "id", where, required=True)
    _text(entry, "database", where, required=True)
    for key in set(SNOWFLAKE_SETTINGS) - {"schemas", "port"}:
        _text(entry, key, where)
    schemas = entry.get("schemas") or []
    if not isinstance(schemas, list) or not all(isinstance(x, str) and x for x in schemas):
        raise SourcesConfigError(f"{where}: `schemas` must be a list of schema names, got {schemas!r}")
    port = entry.get("port")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int)):
        raise SourcesConfigError(f"{where}: `port` must be a whole number, got {port!r}")
    exclude = entry.get("exclude_tables") or []
    if not isinstance(exclude, list) or not all(isinstance(t, str) and t for t in exclude):
        raise SourcesConfigError(f"{where}: `exclude_tables` must be a list of table names, got {exclude!r}")
    settings = tuple((k, tuple(entry[k]) if k == "schemas" else entry[k])
                     for k in SNOWFLAKE_SETTINGS if entry.get(k) is not None)
    return SourceSpec("snowflake", Path(f"snowflake:{entry['database']}"), db_id, _text(entry, "description", where),
                      tuple(exclude), settings)


def _names(entry: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    """``entry[key]`` as a tuple of non-empty strings (absent: empty)."""
    value = entry.get(key) or []
    if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
        raise SourcesConfigError(f"{where}: `{key}` must be a list of names, got {value!r}")
    return tuple(value)


def _url_spec(entry: dict[str, Any], where: str) -> SourceSpec:
    """A ``type: url`` entry (a server database through SQLAlchemy); a literal password is refused."""
    import re

    unknown = sorted(set(entry) - set(URL_SETTINGS) - {"type"})
    if unknown:
        raise SourcesConfigError(f"{where}: unknown setting(s) {', '.join(unknown)} for type url; "
                                 f"known: {', '.join(URL_SETTINGS)}")
    url = _text(entry, "url", where, required=True)
    userinfo = re.match(r"^[^:/]+://([^@/]*)@", url)
    password = userinfo[1].split(":", 1)[1] if userinfo and ":" in userinfo[1] else None
    if password is not None and not re.fullmatch(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}", password):
        raise SourcesConfigError(f"{where}: the `url` holds a password: never write secrets in the sources file; "
                                 "put it in an environment variable and write `user:${PG_PASSWORD}@host`")
    per_schema = entry.get("per_schema", False)
    if not isinstance(per_schema, bool):
        raise SourcesConfigError(f"{where}: `per_schema` must be true or false, got {per_schema!r}")
    server = ServerSource(url=url, id=_text(entry, "id", where), databases=_names(entry, "databases", where),
                          schemas=_names(entry, "schemas", where),
                          exclude_schemas=_names(entry, "exclude_schemas", where),
                          include_tables=_names(entry, "include_tables", where),
                          exclude_tables=_names(entry, "exclude_tables", where), per_schema=per_schema,
                          description=_text(entry, "description", where))
    scheme = url.split("://", 1)[0]
    return SourceSpec("url", Path(f"url:{scheme}"), server.id, server.description, (), server=server)


def _paths(raw: Any, base: Path, key: str) -> list[Path]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise SourcesConfigError(f"`{key}` must be a list of {{path: ...}} entries")
    out = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or "path" not in entry:
            raise SourcesConfigError(f"{key}[{i}]: expected a mapping with `path`")
        out.append(base / _text(entry, "path", f"{key}[{i}]", required=True))
    return out


def _count(raw: dict[str, Any], key: str, default: int, where: Path) -> int:
    """A non-negative whole number setting (``sample_values``, ``sample_value_chars``)."""
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SourcesConfigError(f"{where}: `{key}` must be a whole number >= 0, got {value!r}")
    return value


def load_sources(path: str | Path) -> SourcesConfig:
    """Parse and validate a sources file.

    Args:
        path: the YAML file.

    Returns:
        The parsed :class:`SourcesConfig`.

    Raises:
        SourcesConfigError: the file is missing or malformed (the message names the entry).
    """
    path = Path(path)
    if not path.is_file():
        raise SourcesConfigError(f"sources file {path} not found: create it (see README, 'Sources')")
    try:
        raw = yaml.safe_load(path.read_bytes().decode("utf-8")) or {}
    except UnicodeDecodeError as exc:
        raise SourcesConfigError(f"{path} is not valid UTF-8 (byte {exc.object[exc.start]:#04x} at offset "
                                 f"{exc.start}): save it as UTF-8") from exc
    except OSError as exc:
        raise SourcesConfigError(f"cannot read sources file {path}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise SourcesConfigError(f"{path} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict) or not isinstance(raw.get("databases"), list):
        raise SourcesConfigError(f"{path}: expected a mapping with a `databases:` list")
    base = path.resolve().parent
    specs: list[SourceSpec] = []
    for i, entry in enumerate(raw["databases"]):
        if not isinstance(entry, dict):
            raise SourcesConfigError(f"{path}: databases[{i}] must be a mapping")
        specs.extend(_expand(entry, base, f"{path}: databases[{i}]"))
    return SourcesConfig(
        databases=specs,
        examples=_paths(raw.get("examples"), base, "examples"),
        statements=_paths(raw.get("statements"), base, "statements"),
        sample_values=_count(raw, "sample_values", 5, path),
        sample_value_chars=_count(raw, "sample_value_chars", 60, path),
        origin=path,
    )
