"""Routing that respects who asks, on the demo KB: a session restricted to some databases never gets
a hidden database's name back - not in the ranking, the evidence, retrieval, linking, errors or
the MCP tools - and a hidden database is refused with the very message a database that does not
exist gets. Over plain SQL the restriction is the session variable dbrouter_allowed_databases; over
MCP and serve it comes from the policy."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import time

import anyio
import duckdb
import httpx2
import pytest

import dbrouter
from tests.conftest import DBROUTER, ROOT
from tests.functional.test_mcp import _free_port

HIDDEN = ("concert_singer", "singer")
QUESTIONS = ["How many singers do we have?", "Show the name and country of every singer older than 40",
             "How many concerts were held in 2014?", "list the courses taught by each teacher"]
POLICY = """
roles:
  no_music: ["*"]
users:
  alice: {password_env: TEST_PW_ALICE, databases: [college_3, "flight*", "department_*", headphone_store,
                                                   student_transcripts_tracking, "e_*", "world*", "car*"]}
  root: {password_env: TEST_PW_ROOT, roles: [no_music]}
"""


DISTINCT_NAMES = ("concert_singer", "singer_in_concert")
"""Names only the hidden databases have (a hidden database and one of its tables); "singer" is also
a word of the questions, so it is checked where a database is named (db_id, best)."""


def _leaks(text: str) -> list[str]:
    found = [n for n in DISTINCT_NAMES if n in text]
    return found + re.findall(r'"(?:db_id|best)"\s*:\s*"(singer|concert_singer)"', text)


@pytest.mark.parametrize("path", ["udf", "sql"])
def test_a_restricted_sql_session_never_sees_a_hidden_database(built_kb, path):
    con = (dbrouter.connect(built_kb["warehouse"], embedder="hash") if path == "udf"
           else duckdb.connect(str(built_kb["warehouse"]), read_only=True))
    try:
        every = [r[0] for r in con.execute("select db_id from kb_databases").fetchall()]
        assert set(HIDDEN) <= set(every)
        before = con.execute(f"select route_query_json_{path}(?, 10)", [QUESTIONS[0]]).fetchall()[0][0]
        assert _leaks(before)  # unrestricted, the singer databases answer this
        allowed = [d for d in every if d not in HIDDEN]
        from dbrouter.access import scope_ddl

        con.execute(scope_ddl(allowed))
        for q in QUESTIONS:
            out = [con.execute(f"select route_query_json_{path}(?, 10)", [q]).fetchall()[0][0]]
            for fn in (f"route_query_ranked_{path}(?, 100)", f"route_shortlist_{path}(?, 100)",
                       f"retrieve_statements_{path}(?, null, 20)", f"retrieve_examples_{path}(?, null, 20)"):
                rel = con.sql(f"select * from {fn}", params=[q])
                rows = rel.fetchall()
                assert not {r[rel.columns.index("db_id")] for r in rows} & set(HIDDEN), (fn, q)
                out.append(json.dumps(rows, default=str))
            for text in out:
                assert _leaks(text) == [], (q, text[:300])
            ranked = {r[0] for r in con.execute(f"select db_id from route_query_ranked_{path}(?, 100)", [q]).fetchall()}
            assert ranked <= set(allowed)
        hidden_cols = con.execute(f"select count(*) from retrieve_columns_{path}(?, 'concert_singer', 10)",
                                  [QUESTIONS[0]]).fetchall()[0][0]
        assert hidden_cols == 0
    finally:
        con.close()


async def _session(s, calls):
    await s.initialize()
    out = []
    for name, args in calls:
        r = await s.call_tool(name, args)
        out.append((name, args, r.is_error, r.content[0].text if r.content else ""))
    return out


CALLS = [("list_databases", {}),
         *[("route", {"question": q, "k": 10}) for q in QUESTIONS],
         ("link", {"question": QUESTIONS[0]}),
         ("retrieve", {"question": QUESTIONS[0], "k": 20}),
         ("describe", {"db": "concert_singer"}), ("describe", {"db": "no_such_db"}),
         ("run_sql", {"db": "concert_singer", "sql": "select count(*) from singer"}),
         ("run_sql", {"db": "no_such_db", "sql": "select count(*) from singer"}),
         ("link", {"question": QUESTIONS[0], "db": "singer"}), ("retrieve", {"question": "x", "db": "singer"})]


def _check(results) -> None:
    for name, args, _is_error, text in results:
        assert _leaks(text.replace(json.dumps(args), "")) == [] or args.get("db") in HIDDEN, (name, text[:300])
    by = {(n, json.dumps(a)): (e, t) for n, a, e, t in results}
    dbs = [d["db_id"] for d in json.loads(by[("list_databases", "{}")][1])["databases"]]
    assert dbs and not set(dbs) & set(HIDDEN)
    hidden = by[("describe", json.dumps({"db": "concert_singer"}))]
    missing = by[("describe", json.dumps({"db": "no_such_db"}))]
    assert hidden[0] and missing[0]
    assert hidden[1].replace("concert_singer", "X") == missing[1].replace("no_such_db", "X")  # no existence leak
    run_hidden = by[("run_sql", json.dumps({"db": "concert_singer", "sql": "select count(*) from singer"}))]
    run_missing = by[("run_sql", json.dumps({"db": "no_such_db", "sql": "select count(*) from singer"}))]
    assert run_hidden[0] and run_hidden[1].replace("concert_singer", "X") == run_missing[1].replace("no_such_db", "X")
    assert by[("link", json.dumps({"question": QUESTIONS[0], "db": "singer"}))][0]
    assert by[("retrieve", json.dumps({"question": "x", "db": "singer"}))][0]
    routed = json.loads(by[("route", json.dumps({"question": QUESTIONS[0], "k": 10}))][1])
    assert routed["best"] not in HIDDEN
    assert all(c["db_id"] not in HIDDEN for c in routed["ranking"])


@pytest.fixture()
def policy_env(tmp_path):
    policy = tmp_path / "access.yml"
    policy.write_text(POLICY)
    env = {**os.environ, "DBROUTER_EMBEDDER": "hash", "DBROUTER_LLM_BASE_URL": "", "TEST_PW_ALICE": "a-secret",
           "TEST_PW_ROOT": "r-secret"}
    return policy, env


def test_mcp_over_stdio_answers_for_its_user_only(built_kb, policy_env):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    policy, env = policy_env

    async def main():
        params = StdioServerParameters(command=DBROUTER, args=["mcp", "--warehouse", str(built_kb["warehouse"]),
                                                               "--access", str(policy), "--user", "alice"],
                                       env={**env, "DBROUTER_PASSWORD": "a-secret"}, cwd=str(ROOT))
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            return await _session(s, CALLS)

    _check(anyio.run(main))
    wrong = subprocess.run([DBROUTER, "mcp", "--warehouse", str(built_kb["warehouse"]), "--access", str(policy),
                            "--user", "alice"], env={**env, "DBROUTER_PASSWORD": "nope"}, capture_output=True,
                           text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert wrong.returncode != 0 and "could not be authenticated" in wrong.stderr


def test_mcp_over_http_scopes_each_request_to_its_user(built_kb, policy_env):
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    policy, env = policy_env
    port = _free_port()
    proc = subprocess.Popen([DBROUTER, "mcp", "--http", "--port", str(port), "--access", str(policy),
                             "--warehouse", str(built_kb["warehouse"])], env=env, cwd=str(ROOT),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                httpx2.get(url, timeout=1)
                break
            except httpx2.HTTPError:
                time.sleep(0.2)

        def basic(user, password):
            return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

        async def main(user, password):
            client = create_mcp_http_client(headers={"Authorization": basic(user, password)})
            async with client, streamable_http_client(url, http_client=client) as (r, w), ClientSession(r, w) as s:
                return await _session(s, CALLS[:1])

        _check_alice = anyio.run(main, "alice", "a-secret")
        dbs = [d["db_id"] for d in json.loads(_check_alice[0][3])["databases"]]
        assert dbs and not set(dbs) & set(HIDDEN)
        root = anyio.run(main, "root", "r-secret")
        assert set(HIDDEN) <= {d["db_id"] for d in json.loads(root[0][3])["databases"]}
        for header in (basic("alice", "wrong"), basic("mallory", "a-secret"), "Bearer a-secret", ""):
            r = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                            headers={"Authorization": header} if header else {})
            assert r.status_code == 401, header
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_serve_logs_each_user_in_with_their_own_password_and_scope(built_kb, policy_env, monkeypatch):
    import psycopg

    from dbrouter.access import load_policy
    from dbrouter.serve.server import ServeConfig, start_in_thread, stop

    policy_file, env = policy_env
    monkeypatch.setenv("TEST_PW_ALICE", env["TEST_PW_ALICE"])
    monkeypatch.setenv("TEST_PW_ROOT", env["TEST_PW_ROOT"])
    server, _ = start_in_thread(ServeConfig(built_kb["warehouse"], "127.0.0.1", 0, policy=load_policy(policy_file)))
    port = server.server_address[1]

    def connect(user, password):
        return psycopg.connect(host="127.0.0.1", port=port, user=user, dbname="kb", password=password,
                               connect_timeout=10, autocommit=True)

    try:
        with connect("alice", "a-secret") as con:
            for q in QUESTIONS:
                rows = con.execute("select db_id, evidence from route_query_ranked(%s, 100)", [q]).fetchall()
                assert rows and not {r[0] for r in rows} & set(HIDDEN)
                assert _leaks(json.dumps(rows, default=str)) == [], q
                text = con.execute("select route_query_json(%s, 10)", [q]).fetchall()[0][0]
                assert _leaks(str(text)) == [], q
            for sql in ("select * from kb_databases", "select db_id from kb_allowed_databases, kb_databases",
                        "select * from dbrouter_raw.databases", "select * from pg_catalog.pg_tables",
                        "with x as (select * from kb_examples) select * from x"):
                with pytest.raises(psycopg.Error, match="permission denied|not served to a restricted user"):
                    con.execute(sql)
            # the hardening review's attacks, over the real client: a CTE shadowing a name in a nested
            # scope, SQL in a string, storage statistics naming hidden tables' values
            for sql in ("with x as (with kb_databases as (select 1) select 1) select db_id, source_path "
                        "from kb_databases",
                        "with x as (with kb_columns as (select 1) select 1) select sample_values from kb_columns",
                        "select * from json_execute_serialized_sql(json_serialize_sql("
                        "'select db_id from kb_databases'))",
                        "select * from pragma_storage_info('dbrouter_raw.tables')",
                        "select table_name, estimated_size from duckdb_tables()"):
                with pytest.raises(psycopg.Error, match="permission denied|not served|SQL written in a string") as refused:
                    con.execute(sql)
                assert _leaks(str(refused.value)) == [], sql
            own = {r[0] for r in con.execute("select db_id from kb_allowed_databases").fetchall()}
            assert own and not own & set(HIDDEN)
            assert con.execute("select route_query(%s)", [QUESTIONS[3]]).fetchall()[0][0] not in HIDDEN
        with connect("root", "r-secret") as con:
            assert set(HIDDEN) <= {r[0] for r in con.execute("select db_id from kb_allowed_databases").fetchall()}
            # "*" is every database: an admin browses the whole KB as a BI tool does (alice may not)
            assert set(HIDDEN) <= {r[0] for r in con.execute("select db_id from kb_databases").fetchall()}
            assert con.execute("select count(*) from pg_catalog.pg_tables").fetchall()[0][0] > 0
        for user, password in (("alice", "r-secret"), ("mallory", "a-secret")):
            with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
                connect(user, password)
    finally:
        stop(server)


def test_serve_and_mcp_refuse_a_kb_whose_routing_ignores_the_scope(built_kb, policy_env, tmp_path, monkeypatch):
    """A KB built before access scopes ranks every database whatever the session's scope: served
    under a policy it would show a restricted user everything, so neither endpoint starts on it."""
    import shutil

    from dbrouter.access import AccessError, load_policy
    from dbrouter.serve.mcp import Tools
    from dbrouter.serve.server import ServeConfig, make_server

    stale = tmp_path / "stale.duckdb"
    shutil.copyfile(built_kb["warehouse"], stale)
    with duckdb.connect(str(stale)) as con:  # the view as the previous release built it: every database
        con.execute("create or replace view kb_allowed_databases as select db_id from kb_databases")
    policy = load_policy(policy_env[0])
    with pytest.raises(AccessError, match="built before access policies"):
        make_server(ServeConfig(stale, "127.0.0.1", 0, policy=policy))
    with pytest.raises(AccessError, match="built before access policies"):
        Tools(stale, policy=policy, log=False)
    server = make_server(ServeConfig(stale, "127.0.0.1", 0))  # without a policy it serves as before
    server.server_close()
    server.kb.close()


def test_serve_hands_a_busy_turn_to_the_user_holding_fewest(built_kb, policy_env, monkeypatch):
    """Under a policy a client is a user at an address: alice's many statements waiting cannot keep
    root's one waiting behind them (dbrouter.serve.turns), over the real client."""
    import threading

    import psycopg

    from dbrouter.access import load_policy
    from dbrouter.serve.server import ServeConfig, start_in_thread, stop

    policy_file, env = policy_env
    monkeypatch.setenv("TEST_PW_ALICE", env["TEST_PW_ALICE"])
    monkeypatch.setenv("TEST_PW_ROOT", env["TEST_PW_ROOT"])
    server, _ = start_in_thread(ServeConfig(built_kb["warehouse"], "127.0.0.1", 0, policy=load_policy(policy_file),
                                            max_running=1))
    port, turns = server.server_address[1], server.kb._turns
    done: list[str] = []

    def run(con, name: str) -> None:
        con.execute("select count(*) from kb_allowed_databases").fetchall()
        done.append(name)

    cons = {name: psycopg.connect(host="127.0.0.1", port=port, user=user, dbname="kb", password=password,
                                  connect_timeout=10, autocommit=True)
            for name, user, password in (("alice1", "alice", "a-secret"), ("alice2", "alice", "a-secret"),
                                         ("root", "root", "r-secret"))}
    alice = ("127.0.0.1", "alice")
    assert turns.take(1.0, client=alice) == 0.0  # alice runs a statement: the one turn is hers
    held, threads = True, []
    try:
        for i, name in enumerate(("alice1", "alice2", "root"), start=1):  # they queue in this order
            threads.append(threading.Thread(target=run, args=(cons[name], name)))
            threads[-1].start()
            deadline = time.monotonic() + 20
            while turns.waiting() < i:
                assert time.monotonic() < deadline, f"{name}'s statement never waited"
                time.sleep(0.01)
        turns.give_back(alice)
        held = False
        for t in threads:
            t.join(30)
        assert done == ["root", "alice1", "alice2"]
    finally:
        if held:
            turns.give_back(alice)
        for con in cons.values():
            con.close()
        stop(server)
