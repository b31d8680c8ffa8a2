"""`dbrouter mcp` through the official MCP SDK's own client, over stdio and streamable HTTP, on the
demo KB: an agent's path (route -> link -> run its SQL -> rows) with no LLM configured, hostile
SQL refused, bad arguments answered with tool errors by a server that keeps serving, and the HTTP
transport's password and remote-address rules."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import anyio
import pytest

from tests.conftest import DBROUTER, ROOT

pytest.importorskip("mcp")

from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

ENV = {**os.environ, "DBROUTER_EMBEDDER": "hash", "DBROUTER_LLM_BASE_URL": ""}
QUESTION = "How many singers do we have?"


def _json(result) -> dict | list:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


async def agent_session(s: ClientSession) -> dict:
    """What an agent does: list, route, link, write SQL from the linked schema, run it; then abuse."""
    await s.initialize()
    out: dict = {"tools": [t.name for t in (await s.list_tools()).tools]}
    out["databases"] = _json(await s.call_tool("list_databases", {}))["databases"]
    routed = _json(await s.call_tool("route", {"question": QUESTION, "k": 3}))
    out["routed"] = routed
    linked = _json(await s.call_tool("link", {"question": QUESTION}))
    out["linked"] = linked
    out["linked_small"] = _json(await s.call_tool("link", {"question": QUESTION, "db": "concert_singer",
                                                           "max_columns": 4}))
    out["rows"] = _json(await s.call_tool("run_sql", {"db": "concert_singer", "sql": "select count(*) from singer"}))
    out["described"] = _json(await s.call_tool("describe", {"db": "concert_singer", "table": "singer"}))
    out["retrieved"] = _json(await s.call_tool("retrieve", {"question": QUESTION, "k": 2}))
    errors = {}
    for name, args in (("hostile", ("run_sql", {"db": "concert_singer", "sql": "drop table singer"})),
                       ("two_statements", ("run_sql", {"db": "concert_singer",
                                                       "sql": "select 1; delete from singer"})),
                       ("attach", ("run_sql", {"db": "concert_singer", "sql": "attach database '/tmp/x' as x"})),
                       ("typo", ("describe", {"db": "concert_singr"})),
                       ("bad_k", ("route", {"question": QUESTION, "k": 99})),
                       ("wrong_type", ("route", {"question": QUESTION, "k": "three"})),
                       ("empty", ("link", {"question": "   "})),
                       ("huge_link", ("link", {"question": QUESTION, "max_columns": 100_000})),
                       ("missing", ("run_sql", {"db": "concert_singer"}))):
        result = await s.call_tool(args[0], args[1])
        errors[name] = (result.is_error, result.content[0].text if result.content else "")
    out["errors"] = errors
    # still serving after every refusal, and the data is untouched
    out["after"] = _json(await s.call_tool("run_sql", {"db": "concert_singer", "sql": "select count(*) from singer"}))
    return out


def check_agent_session(out: dict) -> None:
    assert out["tools"] == ["list_databases", "describe", "route", "link", "retrieve", "run_sql"]  # no LLM: no ask
    assert "concert_singer" in [d["db_id"] for d in out["databases"]] and len(out["databases"]) == 10
    assert out["routed"]["best"] in ("concert_singer", "singer") and not out["routed"]["abstained"]
    assert len(out["routed"]["ranking"]) == 3 and "evidence" in out["routed"]["ranking"][0]
    assert out["linked"]["routed"] and out["linked"]["db_id"] == out["routed"]["best"]
    assert any(c.lower().startswith("singer.") for c in out["linked"]["columns"]) and "singer" in out["linked"]["schema"]
    assert 0 < len(out["linked_small"]["columns"]) <= 4
    assert out["rows"]["rows"] == [[6]] and out["rows"]["dialect"] == "sqlite"
    assert "Name" in [c["column"] for c in out["described"]["tables"][0]["columns"]]
    assert set(out["retrieved"]) == {"statements", "examples"}
    e = out["errors"]
    assert all(is_error for is_error, _ in e.values()), e
    assert "DROP statement" in e["hostile"][1] and "concert_singer" in e["typo"][1]
    assert "max_columns must be a whole number from 1 to 200" in e["huge_link"][1]
    assert "from 1 to 20" in e["bad_k"][1] and "did you mean concert_singer" in e["typo"][1]
    assert out["after"]["rows"] == [[6]]


def test_stdio_agent_session_end_to_end(built_kb):
    async def main() -> dict:
        params = StdioServerParameters(command=DBROUTER, args=["mcp", "--warehouse", str(built_kb["warehouse"])],
                                       env=ENV, cwd=str(ROOT))
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            return await agent_session(s)

    check_agent_session(anyio.run(main))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def http_server(built_kb):
    port = _free_port()
    env = {**ENV, "MCP_TEST_PASSWORD": "s3cret"}
    proc = subprocess.Popen([DBROUTER, "mcp", "--http", "--port", str(port), "--password-env", "MCP_TEST_PASSWORD",
                             "--warehouse", str(built_kb["warehouse"])], env=env, cwd=str(ROOT),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        if proc.poll() is not None:
            pytest.fail(f"dbrouter mcp --http exited: {proc.stderr.read()}")
        time.sleep(0.2)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(timeout=30)


def test_http_agent_session_needs_the_password(http_server):
    async def main(password: str) -> dict:
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {password}"})
        async with client, streamable_http_client(http_server, http_client=client) as (r, w), \
                ClientSession(r, w) as s:
            return await agent_session(s)

    check_agent_session(anyio.run(main, "s3cret"))
    import httpx2

    refused = httpx2.post(http_server, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                          headers={"Authorization": "Bearer wrong"})
    assert refused.status_code == 401 and "Bearer" in refused.text


def test_a_remote_address_needs_allow_remote_and_a_password(built_kb):
    proc = subprocess.run([DBROUTER, "mcp", "--http", "--host", "0.0.0.0", "--warehouse", str(built_kb["warehouse"])],
                          env=ENV, cwd=str(ROOT), capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "--allow-remote" in proc.stderr
    proc = subprocess.run([DBROUTER, "mcp", "--http", "--host", "0.0.0.0", "--allow-remote",
                           "--warehouse", str(built_kb["warehouse"])], env=ENV, cwd=str(ROOT), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0 and "password" in proc.stderr
    missing = subprocess.run([sys.executable, "-m", "dbrouter.cli.main", "mcp", "--warehouse", "/nonexistent.duckdb"],
                             env=ENV, cwd=str(ROOT), capture_output=True, text=True, timeout=60)
    assert missing.returncode != 0 and "build a knowledge base first" in missing.stderr


def test_ask_waiting_for_the_llm_does_not_hold_up_other_calls(built_kb, tmp_path, monkeypatch):
    """``ask`` runs on a cursor of its own: while it waits seconds for the LLM, another agent's
    ``route`` is answered (the other tools share one connection, one call at a time)."""
    import threading

    from dbrouter.llm import LLMClient
    from dbrouter.serve.mcp import Tools
    from tests.fake_llm import FakeLLM, Slow

    def slow_sql(messages):
        if "Schema Mapping" in messages[0]["content"]:  # route's phrase mapping: answered at once
            return "singers - singer.Name"
        raise Slow(4, "```sql\nSELECT count(*) FROM singer\n```")

    with FakeLLM(slow_sql, conversation=True) as fake:
        monkeypatch.setenv("DBROUTER_LLM_BASE_URL", fake.base_url)
        monkeypatch.setenv("DBROUTER_LLM_CACHE", str(tmp_path / "llm-cache"))
        tools = Tools(built_kb["warehouse"], LLMClient.from_env(), log=False)
        answers: list = []
        try:
            asking = threading.Thread(target=lambda: answers.append(tools.ask("How many singers do we have?", "singer")))
            asking.start()
            deadline = time.monotonic() + 60
            while not fake.requests and time.monotonic() < deadline:  # ask is now waiting for the LLM
                time.sleep(0.05)
            assert fake.requests
            started = time.monotonic()
            routed = tools.route("How many singers do we have?", 3)
            routed_after = time.monotonic() - started
            asking.join(120)
        finally:
            tools.close()
    assert routed["best"] and asking.is_alive() is False
    assert routed_after < 4, routed_after  # answered before the LLM's 4 s reply
    assert answers and answers[0]["status"] == "ok" and answers[0]["rows"] == [[8]]


def test_one_caller_cannot_fill_the_servers_sessions(http_server):
    """Hardening review: MCP over HTTP accepted 10,000 sessions from one client in 25 s (about 680
    MiB) and then refused every new client. One caller now holds at most MAX_SESSIONS_PER_CALLER
    live sessions (HTTP 429 past it); ending one (DELETE) frees its place."""
    import httpx2

    from dbrouter.serve.mcp_sessions import MAX_SESSIONS_PER_CALLER

    headers = {"Authorization": "Bearer s3cret", "Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "loop", "version": "0"}}}
    opened = []
    for _ in range(MAX_SESSIONS_PER_CALLER):
        reply = httpx2.post(http_server, json=init, headers=headers, timeout=30)
        assert reply.status_code == 200, reply.text
        opened.append(reply.headers["mcp-session-id"])
    over = httpx2.post(http_server, json=init, headers=headers, timeout=30)
    assert over.status_code == 429 and "open sessions" in over.text
    ended = httpx2.delete(http_server, headers={**headers, "mcp-session-id": opened[0]}, timeout=30)
    assert ended.status_code in (200, 204), ended.text
    again = httpx2.post(http_server, json=init, headers=headers, timeout=30)
    assert again.status_code == 200, again.text


def test_password_guesses_over_http_are_slowed_and_counted_per_address(http_server):
    """Like serve's: a wrong password waits, and ten failures a minute from one address lock it out
    (the right password included) until the minute has passed."""
    import httpx2

    from dbrouter.serve import AUTH_FAILURES

    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    started = time.monotonic()
    for i in range(AUTH_FAILURES):
        guess = httpx2.post(http_server, json=body, headers={"Authorization": f"Bearer guess{i}"}, timeout=30)
        assert guess.status_code == 401
    assert time.monotonic() - started >= AUTH_FAILURES * 0.4
    locked = httpx2.post(http_server, json=body, headers={"Authorization": "Bearer s3cret"}, timeout=30)
    assert locked.status_code == 429 and "too many failed logins" in locked.text
