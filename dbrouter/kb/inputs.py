"""What a knowledge base is built from, as digests: a build whose inputs are all unchanged is skipped.

Everything ``dbt build`` reads to make the marts is one of these parts:

- ``sources``: the rows the ingest read from the sources (every raw table; the ingest's timestamp
  left out, the only field that differs between two reads of the same sources);
- ``user``: the tables the KB keeps across builds (examples and statements added with the CLI,
  what the LLM derived), as the warehouse holds them, and the changes journal's changes no build
  has applied yet. The query log is not a part: it feeds only the view ``kb_query_log``, so new log
  entries alone do not rebuild (they stay in the journal, read by ``dbrouter report``, until the
  next build that changes something loads them);
- ``project``: the dbt project's files (models, macros, seeds, tests, analyses, ``dbt_project.yml``),
  the UDFs' code and the dbt profile in use;
- ``embedder``: the embedder's name;
- ``software``: the versions of dbrouter, dbt-core, dbt-duckdb and duckdb.

A build records its parts in the new KB (:data:`~dbrouter.kb.ingest.BUILD_INPUTS` of the raw schema)
after ``dbt build`` passed; the next build compares and, when nothing differs, leaves the warehouse
as it is: no copy, no dbt. An in-place ``dbrouter ingest`` drops the record, so the build after it
rebuilds. A digest compares the content, so a difference is never missed; a spurious one (rows
read in another order) only costs a rebuild.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from dbrouter.connection import Connection
from dbrouter.kb.changes import pending
from dbrouter.kb.dbt_runner import project_dir
from dbrouter.kb.ingest import BUILD_INPUTS, RAW_SCHEMA
from dbrouter.kb.tables import JOURNALS_TABLE, LLM_SCHEMA, USER_SCHEMA

if TYPE_CHECKING:
    import duckdb

INPUTS_TABLE = f"{RAW_SCHEMA}.{BUILD_INPUTS}"

NOT_INPUTS = {f"{USER_SCHEMA}.query_log", JOURNALS_TABLE}
"""Tables of the kept schemas that are no input of a mart (the log's view reads query_log directly;
the journals' offsets are bookkeeping, pending changes are counted instead)."""

SOFTWARE = ("dbrouter", "dbt-core", "dbt-duckdb", "duckdb")

PROJECT_FOLDERS = ("model-paths", "macro-paths", "seed-paths", "test-paths", "analysis-paths")
"""The folders of ``dbt_project.yml`` that dbt reads."""


@dataclass(frozen=True)
class BuildInputs:
    """The digests of one build's inputs.

    Attributes:
        parts: digest of each part (``sources``, ``user``, ``project``, ``embedder``, ``software``).
    """

    parts: dict[str, str]

    def changed_since(self, recorded: dict[str, str] | None) -> list[str]:
        """The parts that differ from ``recorded``.

        Args:
            recorded: the parts a build recorded (:func:`recorded_inputs`), or None.

        Returns:
            The names of the parts that differ, in :attr:`parts` order; every part when there is no
            record.
        """
        if recorded is None:
            return list(self.parts)
        return [name for name, value in self.parts.items() if recorded.get(name) != value]


def _sha(chunks) -> str:
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(chunk if isinstance(chunk, bytes) else str(chunk).encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def sources_digest(rows: dict[str, list[dict]]) -> str:
    """The digest of the raw tables' rows, without the ingest's timestamp.

    Args:
        rows: rows per raw table (:attr:`dbrouter.kb.ingest.Collected.rows`).

    Returns:
        A sha256 hex digest.
    """
    def chunks():
        for name in sorted(rows):
            yield name
            table = rows[name]
            if name == "databases":
                table = [{k: v for k, v in row.items() if k != "ingested_at"} for row in table]
            yield json.dumps(table, ensure_ascii=False, separators=(",", ":"), default=str)

    return _sha(chunks())


def user_digest(con: Connection, warehouse: Path) -> str:
    """The digest of the kept tables' rows and of the changes no build has applied yet.

    Args:
        con: a connection to the warehouse (read-only is enough).
        warehouse: the warehouse file (for its changes journal).

    Returns:
        A sha256 hex digest.
    """
    tables = [f"{s}.{t}" for s, t in con.execute(
        "select schema_name, table_name from duckdb_tables() where database_name = current_database() "
        "and schema_name in (?, ?) order by 1, 2", [USER_SCHEMA, LLM_SCHEMA]).fetchall()
        if f"{s}.{t}" not in NOT_INPUTS]

    def chunks():
        for table in tables:
            yield table
            # sorted as text: the digest must not depend on the order rows were stored in
            for (line,) in con.execute(f"select cast(t as varchar) as line from {table} t order by line").fetchall():
                yield line
        yield f"pending changes: {len(pending(con, warehouse))}"

    return _sha(chunks())


def project_digest() -> str:
    """The digest of the dbt project's files, the UDFs' code and the dbt profile dbt will use.

    Returns:
        A sha256 hex digest.
    """
    import yaml

    import python_udfs

    root = project_dir()
    config = yaml.safe_load((root / "dbt_project.yml").read_text(encoding="utf-8")) or {}
    folders = [root / f for key in PROJECT_FOLDERS for f in config.get(key) or []]
    folders.append(Path(python_udfs.__file__).resolve().parent)
    profiles = os.environ.get("DBT_PROFILES_DIR")
    files = [root / "dbt_project.yml", Path(profiles) / "profiles.yml" if profiles else root / "profiles.example.yml"]
    for folder in folders:
        files += sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)

    def chunks():
        for path in files:
            yield str(path)
            yield path.read_bytes() if path.is_file() else b"missing"

    return _sha(chunks())


def software_digest() -> str:
    """The digest of the versions of the packages that build the KB.

    Returns:
        A sha256 hex digest.
    """
    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "missing"

    return _sha(f"{name}=={version(name)}" for name in SOFTWARE)


def build_inputs(rows: dict[str, list[dict]], con, warehouse: Path, embedder: str) -> BuildInputs:
    """The digests of a build's inputs.

    Args:
        rows: the rows the ingest read (:attr:`dbrouter.kb.ingest.Collected.rows`).
        con: a connection to the warehouse whose kept tables the build reads (or its copy after the
            ingest; None when there is no warehouse yet: the ``user`` part is then empty).
        warehouse: the warehouse file (for its changes journal).
        embedder: the embedder's resolved name.

    Returns:
        The :class:`BuildInputs`.
    """
    return BuildInputs({"sources": sources_digest(rows),
                        "user": user_digest(con, warehouse) if con is not None else "",
                        "project": project_digest(), "embedder": embedder, "software": software_digest()})


def recorded_inputs(con: Connection) -> tuple[dict[str, str], str] | None:
    """What the build of the KB recorded as its inputs.

    Args:
        con: a connection to the warehouse.

    Returns:
        ``(parts, built_at)`` (local time, ``YYYY-MM-DD HH:MM``), or None: no record (a KB built
        before builds recorded them, or ingested in place since).
    """
    # looked up first: a missing table would send DuckDB looking for a Python variable of that name
    if not con.execute("select count(*) from duckdb_tables() where database_name = current_database() "
                       "and schema_name = ? and table_name = ?", [RAW_SCHEMA, BUILD_INPUTS]).fetchall()[0][0]:
        return None
    rows = con.execute(f"select part, digest, built_at from {INPUTS_TABLE}").fetchall()
    if not rows:
        return None
    return {part: value for part, value, _ in rows}, rows[0][2]


def record_inputs(con: duckdb.DuckDBPyConnection, inputs: BuildInputs) -> None:
    """Record ``inputs`` in the KB being built (call after ``dbt build`` passed).

    Args:
        con: a read-write connection to the build's copy.
        inputs: the digests.
    """
    built_at = time.strftime("%Y-%m-%d %H:%M")
    con.execute(f"create or replace table {INPUTS_TABLE} (part varchar primary key, digest varchar not null, "
                "built_at varchar not null)")
    con.executemany(f"insert into {INPUTS_TABLE} values (?, ?, ?)",
                    [(part, value, built_at) for part, value in inputs.parts.items()])
