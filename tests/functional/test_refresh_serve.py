"""Issue 11, scheduled refresh: a table added to a source database is routed to through the running
endpoint after `dbrouter refresh`, without restarting `dbrouter serve`."""

from __future__ import annotations

import os
import sqlite3
import subprocess

from tests.conftest import copy_demo, run_cli

PASSWORD = "refresh-pw"
PLANETS = "Which planet has the most moons?"


def _psql(port: int, sql: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PGPASSWORD": PASSWORD, "PGCONNECT_TIMEOUT": "10"}
    return subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "bi", "-d", "kb", "-X", "-A", "-t",
                           "-v", "ON_ERROR_STOP=1", "-c", sql], capture_output=True, text=True, env=env, timeout=60)


def test_refresh_after_a_schema_change_is_served_without_restart(tmp_path):
    from dbrouter.serve.server import ServeConfig, start_in_thread, stop

    sources = copy_demo(tmp_path)
    warehouse = tmp_path / "kb.duckdb"
    run_cli("refresh", "--sources", str(sources), "--warehouse", str(warehouse))  # first run builds
    server, _ = start_in_thread(ServeConfig(warehouse, "127.0.0.1", 0, PASSWORD))
    port = server.server_address[1]
    try:
        before = _psql(port, "select count(*) from kb_tables where table_name = 'planet'")
        assert before.returncode == 0, before.stderr
        assert before.stdout.strip() == "0"
        quiet = run_cli("refresh", "--sources", str(sources), "--warehouse", str(warehouse))
        assert "nothing to do" in (quiet.stdout + quiet.stderr)
        con = sqlite3.connect(tmp_path / "databases" / "orchestra.sqlite")
        con.executescript("create table planet(planet_id int primary key, planet_name text, moons int);"
                          "insert into planet values (1, 'Jupiter', 95), (2, 'Saturn', 146), (3, 'Mars', 2);")
        con.close()
        changed = run_cli("refresh", "--sources", str(sources), "--warehouse", str(warehouse))
        assert "orchestra" in (changed.stdout + changed.stderr)
        routed = _psql(port, f"select route_query('{PLANETS}')")
        assert routed.returncode == 0, routed.stderr
        assert routed.stdout.strip() == "orchestra"
        assert _psql(port, "select count(*) from kb_tables where table_name = 'planet'").stdout.strip() == "1"
    finally:
        stop(server)
