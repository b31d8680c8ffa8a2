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

from pathlib import Path
from typing import Any

import yaml

from dbrouter.errors import SourcesConfigError
from dbrouter.sources.base import SourcesConfig, SourceSpec, required_text
from dbrouter.sources.registry import SOURCE_TYPES

TOP_LEVEL_SETTINGS = ("databases", "examples", "statements", "sample_values", "sample_value_chars")
"""The keys of the sources file itself; any other is an error (a typo must not be ignored)."""


def _did_you_mean(key: str) -> str:
    import difflib

    close = difflib.get_close_matches(str(key), TOP_LEVEL_SETTINGS, n=1)
    return f"`{key}` (did you mean `{close[0]}`?)" if close else f"`{key}`"


def _paths(raw: Any, base: Path, key: str) -> list[Path]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise SourcesConfigError(f"`{key}` must be a list of {{path: ...}} entries")
    out = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or "path" not in entry:
            raise SourcesConfigError(f"{key}[{i}]: expected a mapping with `path`")
        out.append(base / required_text(entry, "path", f"{key}[{i}]"))
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
        raise SourcesConfigError(f"sources file {path} not found: create it (see docs/sources.md)")
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
    unknown = sorted(set(raw) - set(TOP_LEVEL_SETTINGS))
    if unknown:
        raise SourcesConfigError(f"{path}: unknown setting(s) {', '.join(_did_you_mean(k) for k in unknown)}; the "
                                 f"sources file knows: {', '.join(TOP_LEVEL_SETTINGS)}")
    base = path.resolve().parent
    specs: list[SourceSpec] = []
    for i, entry in enumerate(raw["databases"]):
        if not isinstance(entry, dict):
            raise SourcesConfigError(f"{path}: databases[{i}] must be a mapping")
        where = f"{path}: databases[{i}]"
        kind = entry.get("type")
        if not isinstance(kind, str) or kind not in SOURCE_TYPES:
            raise SourcesConfigError(f"{where}: type must be one of {', '.join(SOURCE_TYPES)}, got {kind!r}")
        specs.extend(SOURCE_TYPES[kind].parse(entry, base, where))
    return SourcesConfig(
        databases=specs,
        examples=_paths(raw.get("examples"), base, "examples"),
        statements=_paths(raw.get("statements"), base, "statements"),
        sample_values=_count(raw, "sample_values", 5, path),
        sample_value_chars=_count(raw, "sample_value_chars", 60, path),
        origin=path,
    )
