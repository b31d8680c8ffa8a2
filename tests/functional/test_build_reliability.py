"""`dbrouter build` is atomic: a complete, consistent KB or the previous one, whatever happens.

Fault injection on real builds of the demo databases (hash embedder): the build process is
killed (SIGTERM, SIGKILL) while dbt runs, a dbt test fails, a reader or a writer has the
warehouse open. Each build that must not take effect is a build of CHANGED sources (one database
removed), so a half-applied build is visible. Plus fast tests of the pieces (process hygiene of
dbt_runner, the consistency check, the build lock) that need no dbt.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from tests.conftest import DBROUTER, ROOT, copy_built_kb, copy_demo, copy_project, run_cli


@pytest.fixture()
def kb(built_kb, tmp_path) -> dict:
    """A private copy of the shared demo build (sources, warehouse, dbt workdir)."""
    copy = copy_built_kb(built_kb, tmp_path / "kb")
    return {"dir": copy["base"], "sources": copy["sources"], "warehouse": copy["warehouse"],
            "log": copy["base"] / ".dbrouter-dbt" / "logs" / "dbt.log"}


def state(warehouse: Path) -> dict:
    """What must not change when a build fails: databases in the KB and in the raw snapshot."""
    from dbrouter.kb.build import kb_problems

    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return {"kb_databases": con.execute("select * from kb_databases order by db_id").fetchall(),
                "raw": con.execute("select db_id from dbrouter_raw.databases order by 1").fetchall(),
                "problems": kb_problems(con)}
    finally:
        con.close()


def leftovers(kb: dict) -> list[Path]:
    """Temporary build files left next to (or under the dbt workdir of) the warehouse."""
    from dbrouter.kb.build import temp_warehouse_path

    temp = temp_warehouse_path(kb["warehouse"])
    found = [p for p in (temp, temp.with_name(temp.name + ".wal")) if p.exists()]
    return found + [p for p in kb["dir"].iterdir() if ".building" in p.name]


def processes(marker: str, program: str = "/bin/dbt") -> list[int]:
    """Pids of live processes running ``program`` whose command line mentions ``marker`` (/proc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
            status = (entry / "status").read_text()
        except OSError:
            continue
        if "\nState:\tZ" in status:  # exited, not yet reaped
            continue
        text = [a.decode(errors="replace") for a in args]
        if any(a.endswith(program) for a in text) and any(marker in a for a in text):
            pids.append(int(entry.name))
    return pids


def wait_until(condition, timeout: float, what: str, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def start_build_and_wait_for_marts(kb: dict, tmp_path: Path) -> subprocess.Popen:
    """Start `dbrouter build` on changed sources; return once dbt has started the kb_* marts."""
    (kb["dir"] / "databases" / "singer.sqlite").unlink()
    offset = kb["log"].stat().st_size
    out = open(tmp_path / "build.out", "w")  # noqa: SIM115 - the build writes to it after this test returns
    proc = subprocess.Popen([DBROUTER, "build", "--sources", str(kb["sources"]), "--warehouse", str(kb["warehouse"])],
                            stdout=out, stderr=subprocess.STDOUT, cwd=str(ROOT),
                            env={**os.environ, "DBROUTER_EMBEDDER": "hash"})

    def marts_started() -> bool:
        assert proc.poll() is None, f"the build ended before the marts: {(tmp_path / 'build.out').read_text()}"
        with open(kb["log"], "rb") as f:
            f.seek(offset)
            return b"START sql table model main.kb_databases" in f.read()

    wait_until(marts_started, 180, "dbt to start the kb_* marts")
    assert processes(str(kb["dir"])), "dbt is not running"
    return proc


@pytest.mark.slow
def test_sigterm_during_dbt_stops_dbt_and_keeps_the_old_kb(kb, tmp_path):
    before = state(kb["warehouse"])
    assert len(before["kb_databases"]) == 10 and before["problems"] == []
    proc = start_build_and_wait_for_marts(kb, tmp_path)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) != 0
    assert processes(str(kb["dir"])) == []  # dbrouter waited for dbt to stop
    assert state(kb["warehouse"]) == before
    assert leftovers(kb) == []
    out = (tmp_path / "build.out").read_text()
    assert f"the previous knowledge base in {kb['warehouse']} is unchanged" in out
    assert "Traceback" not in out


@pytest.mark.slow
def test_sigkill_during_dbt_stops_dbt_keeps_the_old_kb_and_the_next_build_cleans_up(kb, tmp_path):
    before = state(kb["warehouse"])
    proc = start_build_and_wait_for_marts(kb, tmp_path)
    proc.kill()
    proc.wait(timeout=10)
    # the kernel sends dbt SIGTERM when its parent dies (PR_SET_PDEATHSIG); no orphan under pid 1
    wait_until(lambda: not processes(str(kb["dir"])), 15, "the orphaned dbt to exit")
    assert state(kb["warehouse"]) == before
    # the killed build could not clean up: the next build deletes its leftovers, then works
    left = leftovers(kb)
    nxt = run_cli("build", "--sources", str(kb["sources"]), "--warehouse", str(kb["warehouse"]))
    if left:
        assert "removed what an interrupted build left" in nxt.stderr
    assert leftovers(kb) == []
    after = state(kb["warehouse"])
    assert len(after["kb_databases"]) == 9 and after["problems"] == [] and ("singer",) not in after["raw"]


@pytest.mark.slow
def test_a_failing_dbt_test_keeps_the_old_kb(kb, tmp_path):
    project = copy_project(tmp_path / "project")
    # a data test on a mart: it fails after raw, staging and kb_databases have been rebuilt
    (project / "tests" / "dbt" / "assert_injected_failure.sql").write_text(
        "select db_id from {{ ref('kb_databases') }}\n")
    before = state(kb["warehouse"])
    (kb["dir"] / "databases" / "singer.sqlite").unlink()
    proc = run_cli("build", "--sources", str(kb["sources"]), "--warehouse", str(kb["warehouse"]),
                   env={"DBROUTER_PROJECT_DIR": str(project)}, check=False)
    assert proc.returncode == 2
    assert "assert_injected_failure" in proc.stdout + proc.stderr
    error = [line for line in proc.stderr.splitlines() if line.startswith("dbrouter: error:")]
    assert error and f"the previous knowledge base in {kb['warehouse']} is unchanged" in error[0]
    assert state(kb["warehouse"]) == before
    assert leftovers(kb) == []


@pytest.mark.slow
def test_build_while_a_reader_has_the_kb_open(kb):
    """The reader keeps the old KB (the old inode) until it reconnects; the build needs no lock."""
    reader = duckdb.connect(str(kb["warehouse"]), read_only=True)
    try:
        (kb["dir"] / "databases" / "singer.sqlite").unlink()
        run_cli("build", "--sources", str(kb["sources"]), "--warehouse", str(kb["warehouse"]))
        assert reader.execute("select count(*) from kb_databases").fetchall()[0][0] == 10
    finally:
        reader.close()
    after = state(kb["warehouse"])
    assert len(after["kb_databases"]) == 9 and after["problems"] == []


def _hold_open(warehouse: Path, read_only: bool) -> subprocess.Popen:
    """Another process that has ``warehouse`` open until killed."""
    proc = subprocess.Popen([sys.executable, "-c",
                             f"import duckdb, sys, time; c = duckdb.connect({str(warehouse)!r}, read_only={read_only}); "
                             "print('open', flush=True); time.sleep(120)"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "open"
    return proc


def _one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("dbrouter: error:")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


@pytest.mark.slow
def test_writers_blocked_by_another_process_get_one_clear_line(kb):
    wh = str(kb["warehouse"])
    reader = _hold_open(kb["warehouse"], read_only=True)
    try:
        # a statement needs no writer lock: it is recorded for the next build (issue 34)
        added = run_cli("statements", "add", "--warehouse", wh, "--db", "singer", "stars refers to singer.Name")
        assert f"process {reader.pid} has it open" in added.stderr and "kb.changes.jsonl" in added.stderr
        line = _one_error_line(run_cli("ingest", "--sources", str(kb["sources"]), "--warehouse", wh, check=False))
        assert f"cannot write to {wh}: process {reader.pid} has it open (a reader" in line
    finally:
        reader.kill()
        reader.wait()
    before = state(kb["warehouse"])
    writer = _hold_open(kb["warehouse"], read_only=False)
    try:
        line = _one_error_line(run_cli("build", "--sources", str(kb["sources"]), "--warehouse", wh, check=False))
        assert f"the previous knowledge base in {wh} is unchanged" in line
        assert f"process {writer.pid} has it open for writing" in line
    finally:
        writer.kill()
        writer.wait()
    assert state(kb["warehouse"]) == before and leftovers(kb) == []


def test_kb_problems_finds_a_half_built_kb(built_kb, tmp_path):
    """The shape of the reported bug: 10 databases in kb_databases, 9 in kb_column_phrases."""
    from dbrouter.kb.build import InconsistentKB, check_kb, kb_problems

    wh = tmp_path / "kb.duckdb"
    shutil.copyfile(built_kb["warehouse"], wh)
    check_kb(wh)
    con = duckdb.connect(str(wh))
    try:
        con.execute("delete from kb_column_phrases where db_id = 'singer'")
        con.execute("delete from kb_tables where db_id = 'orchestra' and table_name = 'performance'")
        problems = kb_problems(con)
        assert "1 databases of kb_databases missing from kb_column_phrases: singer" in problems
        assert "1 databases whose kb_tables rows differ from kb_databases.n_tables: orchestra" in problems
        con.execute("drop macro table route_query_ranked")
        assert "the route functions (route_query_ranked) are missing" in kb_problems(con)
    finally:
        con.close()
    with pytest.raises(InconsistentKB, match="kb_column_phrases: singer"):
        check_kb(wh)


def test_a_running_build_locks_out_a_second_one(tmp_path, monkeypatch):
    """The second build waits, then stops with one error; the first build's files are untouched."""
    import fcntl

    from dbrouter.kb import build
    from dbrouter.sources.config import load_sources

    sources = copy_demo(tmp_path)
    wh = tmp_path / "kb.duckdb"
    wh.write_bytes(b"previous")
    temp = build.temp_warehouse_path(wh)
    temp.parent.mkdir(parents=True)
    temp.write_bytes(b"the running build's")
    fd = os.open(temp.with_name("kb.duckdb.lock"), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, b"4242")
    monkeypatch.setattr(build, "LOCK_WAIT_SECONDS", 0.5)
    try:
        with pytest.raises(build.BuildError, match=r"unchanged: another build of .* is running \(dbrouter pid 4242"):
            build.build_atomically(load_sources(sources), wh)
    finally:
        os.close(fd)
    assert wh.read_bytes() == b"previous" and temp.read_bytes() == b"the running build's"
    # the lock is free now: what is in building/ is stale, and a build deletes it first
    assert build.remove_stale(wh) == [temp] and not temp.exists()


def _child_running_sleep(tmp_path: Path, marker: str) -> subprocess.Popen:
    """A Python process running `sleep <marker>` through dbt_runner's stoppable runner."""
    script = ("import os; from dbrouter.kb.dbt_runner import _run_stoppable; "
              f"_run_stoppable(['sleep', {marker!r}], dict(os.environ), '/', True)")
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=str(ROOT), stderr=subprocess.PIPE, text=True)
    wait_until(lambda: processes(marker, "sleep"), 20, "the child to start")
    return parent


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_runner_stops_its_child_first(tmp_path, signum):
    marker = f"{600 + signum}.{os.getpid()}"
    parent = _child_running_sleep(tmp_path, marker)
    child = processes(marker, "sleep")[0]
    assert os.getpgid(child) == child != os.getpgid(parent.pid)  # its own process group
    parent.send_signal(signum)
    parent.wait(timeout=30)
    assert "Interrupted: interrupted by " + signal.Signals(signum).name in parent.stderr.read()
    assert processes(marker, "sleep") == []


def test_a_sigkill_of_the_runner_stops_its_child(tmp_path):
    marker = f"700.{os.getpid()}"
    parent = _child_running_sleep(tmp_path, marker)
    parent.kill()
    parent.wait(timeout=10)
    wait_until(lambda: not processes(marker, "sleep"), 5, "the orphaned child to exit")
