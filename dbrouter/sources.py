"""The sources file: the one place where a user declares the databases to route among.

Format (YAML; relative paths are relative to the file)::

    sample_values: 5          # distinct sample values kept per column (0 disables)
    sample_value_chars: 60    # each sample value is cut to this many characters
    databases:
      - {type: sqlite, path: databases/concert_singer.sqlite}       # id defaults to the file stem
      - {type: sqlite, glob: "databases/*.sqlite"}                  # many at once
      - {type: duckdb, path: warehouse/sales.duckdb, id: sales}
      - {type: schema_json, path: schemas/hr.jsonl}                 # one database a line
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

SOURCE_TYPES = ("sqlite", "duckdb", "schema_json")


@dataclass(frozen=True)
class SourceSpec:
    """One declared source file (a database, or for schema_json possibly several)."""

    type: str
    path: Path
    id: str | None = None
    description: str | None = None


@dataclass
class SourcesConfig:
    """The parsed sources file."""

    databases: list[SourceSpec]
    examples: list[Path] = field(default_factory=list)
    statements: list[Path] = field(default_factory=list)
    sample_values: int = 5
    sample_value_chars: int = 60
    origin: Path | None = None


def _expand(entry: dict[str, Any], base: Path, where: str) -> list[SourceSpec]:
    kind = entry.get("type")
    if kind not in SOURCE_TYPES:
        raise SourcesConfigError(f"{where}: type must be one of {', '.join(SOURCE_TYPES)}, got {kind!r}")
    if ("path" in entry) == ("glob" in entry):
        raise SourcesConfigError(f"{where}: give exactly one of `path` or `glob`")
    if "glob" in entry:
        if entry.get("id"):
            raise SourcesConfigError(f"{where}: `id` cannot be used with `glob` (ids come from file names)")
        paths = sorted(Path(p) for p in globlib.glob(str(base / entry["glob"])))
        if not paths:
            raise SourcesConfigError(f"{where}: glob {entry['glob']!r} matched no file under {base}")
        return [SourceSpec(kind, p, None, entry.get("description")) for p in paths]
    return [SourceSpec(kind, base / entry["path"], entry.get("id"), entry.get("description"))]


def _paths(raw: Any, base: Path, key: str) -> list[Path]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise SourcesConfigError(f"`{key}` must be a list of {{path: ...}} entries")
    out = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or "path" not in entry:
            raise SourcesConfigError(f"{key}[{i}]: expected a mapping with `path`")
        out.append(base / entry["path"])
    return out


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
        raw = yaml.safe_load(path.read_text()) or {}
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
        sample_values=int(raw.get("sample_values", 5)),
        sample_value_chars=int(raw.get("sample_value_chars", 60)),
        origin=path,
    )
