"""Benchmark SQL dumps loaded once into SQLite files that generated SQL can run on.

A benchmark directory may hold ``sql/<db_id>.sql``: SQLite dumps (``CREATE TABLE`` + ``INSERT``; some
only create the tables). :func:`load_dumps` loads each into ``<cache_dir>/<db_id>.sqlite`` (written to a
temporary file, then ``os.replace``'d) and reuses it while a stamp beside it (``<db_id>.stamp``: the
dump's size and mtime, the loader version) still matches. A dump that fails is reported and skipped.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from dbrouter.console import err
from dbrouter.errors import BenchmarkError
from dbrouter.sources.base import Target

Log = Callable[[str], None]

LOADER_VERSION = 1
PROGRESS_EVERY = 25


@dataclass
class DumpSet:
    """The loaded dumps: ``paths`` of the SQLite files, ``failed`` dumps with their error, ``empty``
    db_ids whose dump creates tables but no rows (they are in ``paths`` too)."""

    paths: dict[str, Path] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    empty: list[str] = field(default_factory=list)
    reused: int = 0
    seconds: float = 0.0


class DumpError(Exception):
    """One dump cannot be loaded (reported by name, the others still load)."""


def _stamp_of(dump: Path) -> dict:
    st = dump.stat()
    return {"version": LOADER_VERSION, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _read_stamp(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _read_script(dump: Path) -> str:
    data = dump.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DumpError(f"{dump} is not UTF-8 text ({exc})") from None


def _fill(db: Path, script: str) -> int:
    """Run ``script`` into the new SQLite file ``db``; returns its row count over all tables."""
    con = sqlite3.connect(db, isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("PRAGMA synchronous=OFF")
        con.executescript(script)
        if con.in_transaction:
            con.execute("COMMIT")
        tables = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        if not tables:
            raise DumpError("the dump creates no table")
        return sum(con.execute(f'SELECT count(*) FROM "{t.replace(chr(34), chr(34) * 2)}"').fetchone()[0]
                   for t in tables)
    finally:
        con.close()


def _clean_leftovers(cache_dir: Path) -> None:
    """Delete temporary files of loader processes that no longer run (a killed load)."""
    for tmp in cache_dir.glob(".*.tmp-*"):
        pid = tmp.name.rsplit("-", 1)[-1]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            tmp.unlink(missing_ok=True)
        except PermissionError:
            pass


def load_one(dump: Path, cache_dir: Path) -> tuple[Path, bool, bool]:
    """Load one dump into ``<cache_dir>/<db_id>.sqlite`` unless its stamp says it is loaded already.

    Args:
        dump: ``sql/<db_id>.sql``.
        cache_dir: where the SQLite files live.

    Returns:
        (the SQLite file, whether it has no rows, whether it was reused).

    Raises:
        DumpError, sqlite3.Error, OSError: the dump cannot be loaded (no file is left behind).
    """
    db_id = dump.stem
    target, stamp_path = cache_dir / f"{db_id}.sqlite", cache_dir / f"{db_id}.stamp"
    stamp = _stamp_of(dump)
    old = _read_stamp(stamp_path)
    if old and target.is_file() and all(old.get(k) == v for k, v in stamp.items()):
        return target, bool(old.get("empty")), True
    stamp_path.unlink(missing_ok=True)
    tmp = cache_dir / f".{db_id}.sqlite.tmp-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    try:
        rows = _fill(tmp, _read_script(dump))
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _write_atomic(stamp_path, json.dumps({**stamp, "rows": rows, "empty": rows == 0}))
    return target, rows == 0, False


def load_dumps(bench_path: Path, cache_dir: Path, db_ids: Iterable[str] | None = None, log: Log = err) -> DumpSet:
    """Load the benchmark's SQL dumps into SQLite files (once; reused while the dumps are unchanged).

    Args:
        bench_path: the benchmark directory (holds ``sql/<db_id>.sql``).
        cache_dir: directory of the SQLite files (created).
        db_ids: the databases to load (default: every dump).
        log: progress and per-dump failures (every ``PROGRESS_EVERY`` databases and at the end).

    Returns:
        The :class:`DumpSet`; a db_id without a dump file, or whose dump fails, is in ``failed``.

    Raises:
        BenchmarkError: the benchmark has no ``sql`` directory.
    """
    start = time.monotonic()
    sql_dir = Path(bench_path) / "sql"
    if not sql_dir.is_dir():
        raise BenchmarkError(f"{sql_dir} not found: this benchmark has no SQL dumps (sql/<db_id>.sql), so SQL "
                             "cannot run on its databases; add them or run without execution")
    available = {p.stem: p for p in sql_dir.glob("*.sql") if p.is_file()}
    wanted = sorted(available) if db_ids is None else list(dict.fromkeys(db_ids))
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    _clean_leftovers(cache_dir)
    out = DumpSet()
    for no, db_id in enumerate(wanted, 1):
        dump = available.get(db_id)
        if dump is None:
            out.failed[db_id] = f"no dump file {sql_dir / (db_id + '.sql')}"
            log(f"dump {db_id}: {out.failed[db_id]} (skipped)")
        else:
            try:
                path, empty, reused = load_one(dump, cache_dir)
            except (DumpError, sqlite3.Error, OSError) as exc:
                out.failed[db_id] = f"{type(exc).__name__}: {exc}" if not isinstance(exc, DumpError) else str(exc)
                log(f"dump {db_id}: {out.failed[db_id]} (skipped)")
            else:
                out.paths[db_id] = path
                out.reused += reused
                if empty:
                    out.empty.append(db_id)
        if no % PROGRESS_EVERY == 0 or no == len(wanted):
            log(f"dumps: {no}/{len(wanted)} done ({len(out.paths) - out.reused} loaded, {out.reused} reused, "
                f"{len(out.failed)} failed, {len(out.empty)} without rows) in {time.monotonic() - start:.1f}s")
    out.seconds = time.monotonic() - start
    return out


def targets(dumpset: DumpSet) -> dict[str, Target]:
    """The loaded dumps as execution targets (kind ``sqlite``), by db_id.

    Args:
        dumpset: what :func:`load_dumps` returned.

    Returns:
        ``{db_id: Target(db_id, "sqlite", path)}`` for every loaded dump (failed ones are absent).
    """
    return {db_id: Target(db_id, "sqlite", path) for db_id, path in dumpset.paths.items()}


def databases_with_samples(bench_path: Path, databases_file: Path, dest: Path, cache_dir: Path,
                           n: int = 5, chars: int = 60, log: Log = err) -> tuple[Path, int]:
    """A copy of a benchmark's databases.jsonl whose columns carry sample values read from its SQL
    dumps (what a KB over the real databases would hold): ``samples`` per column, as the
    ``schema_json`` source reads them.

    Args:
        bench_path: the benchmark directory (``sql/<db_id>.sql``).
        databases_file: its databases.jsonl.
        dest: the file to write.
        cache_dir: where the dumps are loaded (:func:`load_dumps`).
        n: values per column; chars: cut each value to this length (the sources' defaults).
        log: progress output.

    Returns:
        (``dest``, how many databases got sample values).
    """
    from dbrouter.sources.base import quote_ident, sample_values

    dumps = load_dumps(bench_path, cache_dir, log=log)
    out, filled = [], 0
    for line in Path(databases_file).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        path = dumps.paths.get(obj["db_id"])
        if path is not None:
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            con.text_factory = lambda b: b.decode("utf-8", errors="replace")
            try:
                for table in obj.get("tables", []):
                    for col in table.get("columns", []):
                        try:
                            col["samples"] = sample_values(lambda sql, con=con: con.execute(sql).fetchall(),
                                                           quote_ident(table["name"]), col["name"], n, chars)
                        except sqlite3.Error:
                            col["samples"] = []
                filled += 1
            finally:
                con.close()
        out.append(json.dumps(obj))
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text("\n".join(out) + "\n", encoding="utf-8")
    log(f"sample values from {filled} dumps written to {dest}")
    return dest, filled
