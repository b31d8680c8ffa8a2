"""`dbrouter build` as one atomic step: a complete, consistent knowledge base, or the old one.

A build whose inputs are all as the warehouse's build recorded them (:mod:`dbrouter.kb.inputs`)
reads the sources, finds nothing changed and stops there: the warehouse is not copied, dbt does
not run, nothing is written.

A build never writes to the warehouse file itself. It copies the current warehouse (its
embedding cache included, so unchanged documents are not embedded again) to a temporary file,
ingests the sources and runs ``dbt build`` there, checks the result (:func:`kb_problems`) and
only then moves it over the warehouse with :func:`os.replace`, which is atomic on POSIX. A
failure, a failed dbt test, a SIGINT/SIGTERM or a SIGKILL at any point before the rename leaves
the warehouse exactly as it was.

What readers see: a process that has the warehouse open when the rename happens keeps reading
the OLD file (its open descriptor points at the old inode, which lives on until it is closed);
connections opened after the rename see the new knowledge base. A long-lived reader (a server)
has to reconnect, e.g. when the warehouse's inode or mtime changes, to pick a build up; within
one process DuckDB hands a new connection the database instance already open for that path, so
it must close ALL its connections to the file before reconnecting (checked with DuckDB 2.0). Readers
never block a build: while it runs the build holds only a read-only (shared) DuckDB connection
on the warehouse, which readers share; a process that has it open for writing (e.g.
``dbrouter statements add``) makes the build stop with one error line, and the shared lock
keeps such writers out until the rename, so nothing they add is lost by the replace.

The temporary file is ``<warehouse folder>/.dbrouter-dbt/building/<warehouse name>``: same
file name, because dbt-duckdb names the catalog after the file's stem, and the same path on
every build, so dbt's partial parsing (keyed on the profile's path) keeps working. One build
per warehouse at a time: a lock file next to it (inherited by dbt, so it is held until an
orphaned dbt has exited too) serialises builds, and whatever a killed build left in
``building/`` is deleted by the next one.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dbrouter.connection import Connection
from dbrouter.errors import USER_ERRORS, BuildError, DbrouterError, DbtRunError, InconsistentKB
from dbrouter.feedback.log import log_path
from dbrouter.kb.changes import changes_path
from dbrouter.kb.dbt_runner import Interrupted, dbt_workdir, run_dbt, user_profile
from dbrouter.kb.ingest import ingest, ingest_report, read_sources, user_statements
from dbrouter.kb.inputs import BuildInputs, build_inputs, record_inputs, recorded_inputs, user_digest
from python_udfs.embeddings import resolve_embedder_name

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from dbrouter.kb.ingest import IngestReport
    from dbrouter.sources.base import SourcesConfig

LOCK_WAIT_SECONDS = 15.0
"""How long a build waits for another build of the same warehouse (or its dying dbt) to end."""


@dataclass(frozen=True)
class BuildResult:
    """What one atomic build did.

    Attributes:
        warehouse: the warehouse file, now holding the new knowledge base.
        ingest: the ingest's report (counts, issues).
        databases: rows of ``kb_databases`` in the new knowledge base.
        replaced: True when an existing warehouse was replaced (False: first build).
        dbt_seconds: time spent in ``dbt build``.
        seconds: time of the whole build (copy, ingest, dbt, check, rename).
        removed_stale: leftovers of earlier killed builds that were deleted first.
        changed: the inputs that differed from the last build's (:mod:`dbrouter.kb.inputs`; every
            part on a first build, a forced one or when the KB has no record).
        since: when the KB's last build ran (local ``YYYY-MM-DD HH:MM``), None without a record.
    """

    warehouse: Path
    ingest: IngestReport
    databases: int
    replaced: bool
    dbt_seconds: float
    seconds: float
    removed_stale: list[Path] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    since: str | None = None

    @property
    def unchanged(self) -> bool:
        """True when no input changed: the warehouse was left as it was (no copy, no dbt)."""
        return self.replaced and not self.changed


def temp_warehouse_path(warehouse: str | Path) -> Path:
    """Where a build of ``warehouse`` builds before the rename.

    Args:
        warehouse: the warehouse file.

    Returns:
        ``<warehouse folder>/.dbrouter-dbt/building/<warehouse file name>`` (same file system,
        so the final :func:`os.replace` is atomic).
    """
    warehouse = Path(warehouse).resolve()
    return dbt_workdir(warehouse) / "building" / warehouse.name


def _lock_path(warehouse: Path) -> Path:
    return temp_warehouse_path(warehouse).with_name(warehouse.name + ".lock")


def _wal(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


def _remove(path: Path) -> bool:
    try:
        path.unlink()
        return True
    except FileNotFoundError:
        return False


def kb_problems(con: Connection) -> list[str]:
    """Consistency problems of a built knowledge base (empty list: consistent).

    Checks that the route functions exist and that every database of ``kb_databases`` with tables
    is in ``kb_tables`` (with as many tables), ``kb_columns`` and ``kb_column_phrases`` (when it
    has columns) and ``kb_document_embeddings``, and that those tables name no database missing
    from ``kb_databases``: what a build stopped half-way through the marts leaves behind. The
    same invariants are the dbt singular test ``assert_marts_cover_the_same_databases``, which a
    package user's ``dbt build`` runs; this check also covers a build whose dbt tests never ran.

    Args:
        con: a DuckDB connection to the warehouse.

    Returns:
        One line per problem, naming the table and up to 5 databases.
    """
    import duckdb

    problems: list[str] = []
    try:
        if not con.execute("select count(*) from duckdb_functions() "
                           "where function_name = 'route_query_ranked'").fetchall()[0][0]:
            problems.append("the route functions (route_query_ranked) are missing")
        checks = {
            "kb_tables": ("n_tables > 0", "select db_id, count(*) as n from kb_tables group by 1"),
            "kb_columns": ("n_columns > 0", "select distinct db_id from kb_columns"),
            "kb_column_phrases": ("n_columns > 0", "select distinct db_id from kb_column_phrases"),
            "kb_document_embeddings": ("true", "select distinct db_id from kb_document_embeddings"),
        }
        for table, (expected, present) in checks.items():
            missing = [r[0] for r in con.execute(
                f"select d.db_id from kb_databases d where {expected} and d.db_id not in "
                f"(select db_id from ({present})) order by 1").fetchall()]
            extra = [r[0] for r in con.execute(
                f"select db_id from ({present}) where db_id not in (select db_id from kb_databases) "
                "order by 1").fetchall()]
            if missing:
                problems.append(f"{len(missing)} databases of kb_databases missing from {table}: "
                                f"{', '.join(map(str, missing[:5]))}")
            if extra:
                problems.append(f"{len(extra)} databases in {table} but not in kb_databases: "
                                f"{', '.join(map(str, extra[:5]))}")
        wrong = [r[0] for r in con.execute(
            "select d.db_id from kb_databases d join (select db_id, count(*) as n from kb_tables group by 1) t "
            "on t.db_id = d.db_id where t.n <> d.n_tables order by 1").fetchall()]
        if wrong:
            problems.append(f"{len(wrong)} databases whose kb_tables rows differ from kb_databases.n_tables: "
                            f"{', '.join(wrong[:5])}")
    except duckdb.Error as exc:
        problems.append(f"cannot check the knowledge base: {' '.join(str(exc).split())}")
    return problems


def check_kb(path: str | Path) -> None:
    """Open ``path`` read-only and raise when :func:`kb_problems` finds anything.

    Args:
        path: a warehouse file.

    Raises:
        InconsistentKB: the problems, one per ``;``.
    """
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        problems = kb_problems(con)
    finally:
        con.close()
    if problems:
        raise InconsistentKB(f"the knowledge base in {path} is inconsistent: {'; '.join(problems)}")


def lock_conflict_message(path: str | Path, exc: BaseException, action: str = "write to") -> str | None:
    """A one-line explanation of DuckDB's "Could not set lock" error, or None for other errors.

    DuckDB lets either one process open a file for writing or several open it read-only, never
    both at once.

    Args:
        path: the warehouse file.
        exc: the error DuckDB raised.
        action: what was attempted, for the message (``"write to"``, ``"open"``).

    Returns:
        The message, naming the other process's pid when DuckDB gave it.
    """
    text = " ".join(str(exc).split())
    if "could not set lock" not in text.lower():
        return None
    pid = re.search(r"PID (\d+)", text)
    who = f"process {pid.group(1)}" if pid else "another process"
    if "read-only mode" in text:  # DuckDB adds this hint when the holder is a reader
        return (f"cannot {action} {path}: {who} has it open (a reader such as `dbrouter route`, a server, "
                "a SQL client, or a running `dbrouter build`). DuckDB lets one process write a file or several "
                "read it, not both: close that connection (or let the build finish) and retry")
    return (f"cannot {action} {path}: {who} has it open for writing (a `dbrouter statements add`, "
            "an `ingest` or a SQL client); retry when it has finished")


def _acquire_lock(warehouse: Path, progress: Callable[[str], None]) -> int:
    """Take the build lock of ``warehouse``; returns its file descriptor."""
    path = _lock_path(warehouse)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    waiting = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                os.close(fd)
                raise BuildError(f"another build of {warehouse} is running (dbrouter pid {owner}, or the dbt it "
                                 "started); wait for it to finish") from None
            if not waiting:
                progress(f"waiting up to {LOCK_WAIT_SECONDS:.0f}s for another build of {warehouse} to end")
                waiting = True
            time.sleep(0.2)
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd


def remove_stale(warehouse: str | Path) -> list[Path]:
    """Delete what killed builds of ``warehouse`` left (the temporary file, its WAL, DuckDB's spill folder).

    Only call this while holding the build lock (:func:`build_atomically` does): then no other
    build is running and anything in ``building/`` belongs to a dead one.

    Args:
        warehouse: the warehouse file.

    Returns:
        The files deleted.
    """
    temp = temp_warehouse_path(warehouse)
    removed = [p for p in (temp, _wal(temp)) if _remove(p)]
    spill = temp.with_name(temp.name + ".tmp")  # DuckDB's spill folder, left behind when dbt was killed
    if spill.is_dir():
        shutil.rmtree(spill, ignore_errors=True)
        removed.append(spill)
    return removed


def _open_shared(warehouse: Path):
    """A read-only connection on the existing warehouse: readers may stay, writers are kept out."""
    import duckdb

    try:
        return duckdb.connect(str(warehouse), read_only=True)
    except duckdb.Error as exc:
        msg = lock_conflict_message(warehouse, exc, "build")
        raise BuildError(msg or f"cannot open the existing {warehouse} as a DuckDB file "
                                f"({' '.join(str(exc).split())}); move it away or build to another --warehouse"
                         ) from exc


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _raise_terminated(signum, _frame) -> None:
    raise Interrupted(signum)


def build_atomically(config: SourcesConfig, warehouse: str | Path, embedder: str | None = None,
                     progress: Callable[[str], None] | None = None,
                     on_ingested: Callable[[IngestReport], None] | None = None,
                     quiet: bool = False, force: bool = False) -> BuildResult:
    """Ingest ``config`` and ``dbt build`` into a copy of ``warehouse``, check it, then swap it in.

    Either the warehouse holds the complete new knowledge base afterwards, or it is untouched
    (byte for byte) and an exception says why. When none of the build's inputs changed since the
    warehouse's build (:mod:`dbrouter.kb.inputs`: the rows read from the sources, the kept tables
    and pending changes, the dbt project, the embedder, the software), the warehouse is left as it
    is without copying it or running dbt (``force`` rebuilds regardless). A reader that has the
    warehouse open keeps reading the old file until it reconnects (see the module docstring). While
    this runs, SIGTERM is turned into :class:`~dbrouter.kb.dbt_runner.Interrupted` so the temporary
    file is cleaned up; a SIGKILL leaves it behind for the next build to delete, and dbt dies with
    this process.

    Args:
        config: the parsed sources file.
        warehouse: the warehouse file (created by the first build).
        embedder: embedder name for the profile (default ``$DBROUTER_EMBEDDER`` or minilm).
        progress: called with progress lines (default: discarded).
        on_ingested: called with the ingest report before dbt starts (e.g. to print issues).
        quiet: capture dbt's output instead of streaming it.
        force: rebuild even when no input changed.

    Returns:
        A :class:`BuildResult` (``unchanged`` when nothing was rebuilt).

    Raises:
        BuildError: the build failed (dbt error or failed test, inconsistent result, unreadable
            sources, the warehouse open for writing elsewhere, another build running); the message
            starts by saying that the previous knowledge base is unchanged.
        Interrupted: SIGTERM, or SIGINT while dbt ran; dbt was stopped, nothing was changed.
        KeyboardInterrupt: SIGINT outside dbt; nothing was changed.
    """
    import duckdb

    warehouse = Path(warehouse).resolve()
    existed = warehouse.exists()
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if in_main else None
    try:
        return _build(config, warehouse, embedder, progress or _log.info, on_ingested, quiet, force)
    except (*USER_ERRORS, duckdb.Error, OSError) as exc:
        state = (f"the previous knowledge base in {warehouse} is unchanged" if existed
                 else f"no knowledge base was written to {warehouse}")
        detail = str(exc) if isinstance(exc, DbrouterError) else f"{type(exc).__name__}: {exc}"
        raise (InconsistentKB if isinstance(exc, InconsistentKB) else BuildError)(
            f"build failed, {state}: {detail}") from exc
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def check_user_profile() -> None:
    """With ``$DBT_PROFILES_DIR`` set, check before anything runs that its ``dbrouter`` profile
    exists and writes to ``$DBROUTER_WAREHOUSE`` (builds run on a copy of the warehouse: a fixed
    path would make dbt write the real file, or another one, instead of the copy).

    Raises:
        DbtRunError: the folder has no ``dbrouter`` profile, or its target's ``path`` does not use
            ``env_var('DBROUTER_WAREHOUSE')``; the message says how to fix it.
    """
    folder = os.environ.get("DBT_PROFILES_DIR")
    if not folder:
        return

    profile = user_profile(Path(folder))
    outputs = profile.get("outputs") or {}
    target = outputs.get(profile.get("target")) if isinstance(outputs, dict) else None
    path = str((target or {}).get("path", "")) if isinstance(target, dict) else ""
    if (target or {}).get("type", "duckdb") == "duckdb" and "DBROUTER_WAREHOUSE" not in path:
        raise DbtRunError(f"the `dbrouter` profile in $DBT_PROFILES_DIR ({folder}) writes to path {path!r}; "
                          "`dbrouter build` needs path: \"{{ env_var('DBROUTER_WAREHOUSE') }}\" (it builds a "
                          "copy of the warehouse and swaps it in), or unset DBT_PROFILES_DIR")


def _build(config: SourcesConfig, warehouse: Path, embedder: str | None, progress: Callable[[str], None],
           on_ingested: Callable[[IngestReport], None] | None, quiet: bool, force: bool) -> BuildResult:
    """The steps of :func:`build_atomically` (``warehouse`` resolved); cleans up on any exit."""
    check_user_profile()
    import duckdb

    started = time.time()
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    temp = temp_warehouse_path(warehouse)
    lock_fd = _acquire_lock(warehouse, progress)
    guard = None
    try:
        removed = remove_stale(warehouse)
        if removed:
            progress(f"removed what an interrupted build left: {', '.join(str(p) for p in removed)}")
        replaced = warehouse.exists()
        if replaced:
            guard = _open_shared(warehouse)
        collected = read_sources(config, progress)
        inputs = build_inputs(collected.rows, guard, warehouse, resolve_embedder_name(embedder))
        recorded = recorded_inputs(guard) if guard is not None else None
        changed = list(inputs.parts) if force else inputs.changed_since(recorded[0] if recorded else None)
        since = recorded[1] if recorded else None
        if guard is not None and not changed:
            report = ingest_report(collected, user_statements(guard), 0.0)
            if on_ingested:
                on_ingested(report)
            databases = guard.execute("select count(*) from kb_databases").fetchall()[0][0]
            return BuildResult(warehouse=warehouse, ingest=report, databases=databases, replaced=True,
                               dbt_seconds=0.0, seconds=time.time() - started, removed_stale=removed,
                               changed=[], since=since)
        if replaced:
            why = ("--force" if force else "no record of the last build's inputs" if not recorded
                   else f"{', '.join(changed)} changed since the build of {since}")
            progress(f"{why}: rebuilding on a copy")
            shutil.copyfile(warehouse, temp)
            if _wal(warehouse).exists():  # a crashed writer's log: part of the current state
                shutil.copyfile(_wal(warehouse), _wal(temp))
        report = ingest(config, temp, progress=progress, query_log=log_path(warehouse),
                        changes=changes_path(warehouse), collected=collected)
        if on_ingested:
            on_ingested(report)
        dbt_started = time.time()
        try:
            run_dbt(["build"], temp, embedder, quiet=quiet, workdir=dbt_workdir(warehouse), pass_fds=(lock_fd,))
        except DbrouterError as exc:
            if os.environ.get("DBT_PROFILES_DIR"):
                raise BuildError(f"{exc}\n(the profile in $DBT_PROFILES_DIR must write to path "
                                 "\"{{ env_var('DBROUTER_WAREHOUSE') }}\": builds run on a copy)") from exc
            raise
        dbt_seconds = time.time() - dbt_started
        con = duckdb.connect(str(temp))
        try:
            problems = kb_problems(con)
            databases = 0 if problems else con.execute("select count(*) from kb_databases").fetchall()[0][0]
            if not problems:  # the kept tables as dbt read them, and the changes that came in since
                record_inputs(con, BuildInputs({**inputs.parts, "user": user_digest(con, warehouse)}))
            con.execute("checkpoint")
        finally:
            con.close()
        if problems:
            raise InconsistentKB(f"the new knowledge base is inconsistent: {'; '.join(problems)}")
        if _wal(temp).exists():
            raise BuildError(f"the new knowledge base {temp} was not checkpointed (its .wal remains)")
        _remove(_wal(warehouse))  # merged into the copy; it must not be replayed onto the new file
        os.replace(temp, warehouse)
        _fsync_dir(warehouse.parent)
    except BaseException:
        remove_stale(warehouse)
        raise
    finally:
        if guard is not None:
            guard.close()
        os.close(lock_fd)
    return BuildResult(warehouse=warehouse, ingest=report, databases=databases, replaced=replaced,
                       dbt_seconds=dbt_seconds, seconds=time.time() - started, removed_stale=removed,
                       changed=changed, since=since)
