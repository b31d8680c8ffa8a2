"""The access policy: loading (with errors that name the entry), authentication, patterns, and the
session scope statement."""

import duckdb
import pytest

from dbrouter.access import AccessError, load_policy, scope_ddl

POLICY = """
roles:
  sales: ["sales_*", crm]
users:
  alice: {password_env: PW_ALICE, roles: [sales], databases: [hr]}
  bob: {password_env: PW_BOB, databases: []}
"""


def test_users_see_their_databases_and_roles_patterns(tmp_path, monkeypatch):
    (tmp_path / "a.yml").write_text(POLICY)
    policy = load_policy(tmp_path / "a.yml")
    every = ["crm", "hr", "sales_eu", "sales_us", "salesforce", "finance"]
    assert policy.users["alice"].allowed(every) == ["crm", "hr", "sales_eu", "sales_us"]
    assert policy.users["bob"].allowed(every) == []
    monkeypatch.setenv("PW_ALICE", "s3cret")
    assert policy.authenticate("alice", "s3cret").name == "alice"
    for user, password in (("alice", "wrong"), ("alice", None), ("mallory", "s3cret"), ("bob", "")):
        with pytest.raises(AccessError, match="could not be authenticated") as exc:
            policy.authenticate(user, password)
        assert "mallory" not in str(exc.value) or user == "mallory"


@pytest.mark.parametrize("text, message", [
    ("users: []", "expected `users:`"),
    ("users: {a: {databases: [x]}}", "password_env"),
    ("users: {a: {password_env: P, roles: [nope]}}", "unknown role 'nope'"),
    ("users: {a: {password_env: P, databases: x}}", "must be a list"),
    ("users: {a: {password_env: P, colour: red}}", "expected password_env, roles and/or databases"),
    ("grants: {}\nusers: {}", "top level"),
])
def test_a_malformed_policy_names_what_is_wrong(tmp_path, text, message):
    (tmp_path / "a.yml").write_text(text)
    with pytest.raises(AccessError, match=message):
        load_policy(tmp_path / "a.yml")
    with pytest.raises(AccessError, match="cannot read"):
        load_policy(tmp_path / "missing.yml")


def test_the_scope_statement_quotes_names_may_be_empty_and_lifts():
    con = duckdb.connect()
    con.execute("create table kb_databases as select unnest(['o''brien', 'plain', 'other']) as db_id")
    con.execute("create view kb_allowed_databases as select db_id from kb_databases where "
                "getvariable('dbrouter_allowed_databases') is null "
                "or list_contains(getvariable('dbrouter_allowed_databases'), db_id)")
    con.execute(scope_ddl(["o'brien", "plain"]))
    assert sorted(r[0] for r in con.execute("select db_id from kb_allowed_databases").fetchall()) == ["o'brien", "plain"]
    con.execute(scope_ddl([]))
    assert con.execute("select count(*) from kb_allowed_databases").fetchall() == [(0,)]
    con.execute(scope_ddl(None))
    assert con.execute("select count(*) from kb_allowed_databases").fetchall() == [(3,)]


def test_snowflake_grants_translate_shell_patterns_to_like(tmp_path):
    import fnmatch
    import re

    from dbrouter.access import glob_to_like, load_roles

    def like(value: str, pattern: str) -> bool:  # LIKE with ESCAPE '\\', as Snowflake evaluates it
        rx, i = "", 0
        while i < len(pattern):
            ch = pattern[i]
            if ch == "\\":
                rx, i = rx + re.escape(pattern[i + 1]), i + 2
                continue
            rx, i = rx + (".*" if ch == "%" else "." if ch == "_" else re.escape(ch)), i + 1
        return re.fullmatch(rx, value, re.S) is not None

    names = ["flight_1", "flight2", "flightX_9", "concert_singer", "concertXsinger", "a%b", "axb", "Flight_1"]
    for pattern in ["flight_*", "concert_singer", "a%b", "flight?", "*", "f*_?"]:
        assert [n for n in names if like(n, glob_to_like(pattern))] == [n for n in names
                                                                         if fnmatch.fnmatchcase(n, pattern)], pattern
    with pytest.raises(AccessError, match=r"\* and \? only"):
        glob_to_like("flight_[12]")
    policy = tmp_path / "p.yml"
    policy.write_text("roles:\n  analyst: [a, 'b*']\n")  # Snowflake needs no users
    assert load_roles(policy) == {"analyst": ("a", "b*")}
    policy.write_text("users:\n  u: {password_env: X, databases: ['*']}\n")
    with pytest.raises(AccessError, match="there is none"):
        load_roles(policy)


@pytest.mark.parametrize("view", [
    None,  # built before access scopes: no view at all
    "create view kb_allowed_databases as select db_id from kb_databases",  # a view that ignores the scope
])
def test_a_kb_whose_routing_ignores_the_scope_is_refused_not_served_unfiltered(tmp_path, view):
    from dbrouter.access import UserAccess, check_scopable, restrict

    con = duckdb.connect()
    con.execute("create table kb_databases as select unnest(['crm', 'hr', 'finance']) as db_id")
    if view:
        con.execute(view)
    alice = UserAccess("alice", ("crm",), "PW")
    for check in (lambda: check_scopable(con), lambda: restrict(con, alice)):
        with pytest.raises(AccessError, match="built before access policies"):
            check()
    con.execute("create or replace view kb_allowed_databases as select db_id from kb_databases "
                "where getvariable('dbrouter_allowed_databases') is null "
                "or list_contains(getvariable('dbrouter_allowed_databases'), db_id)")  # what the KB builds now
    check_scopable(con)
    restrict(con, alice)
    assert con.execute("select db_id from kb_allowed_databases").fetchall() == [("crm",)]
    restrict(con, None)
    assert len(con.execute("select db_id from kb_allowed_databases").fetchall()) == 3


def test_a_user_whose_password_variable_is_unset_stops_the_start_naming_it(tmp_path, monkeypatch):
    """Before: serve/mcp --access started, and every login of that user failed with a message about
    --password-env, the wrong option."""
    path = tmp_path / "access.yml"
    path.write_text("users:\n  alice: {password_env: PW_ALICE_T, databases: ['*']}\n"
                    "  bob: {password_env: PW_BOB_T, databases: [a]}\n")
    policy = load_policy(path)
    monkeypatch.setenv("PW_ALICE_T", "s3cret")
    monkeypatch.setenv("PW_BOB_T", "")
    with pytest.raises(AccessError, match=r"1 user\(s\) is unset or empty: bob \(\$PW_BOB_T\)"):
        policy.check_passwords()
    policy.check_passwords(["alice"])  # an MCP stdio session of alice needs only hers
    monkeypatch.setenv("PW_BOB_T", "x")
    policy.check_passwords()


def test_serve_with_an_unset_password_variable_refuses_to_start(tmp_path):
    import os
    import subprocess

    from tests.conftest import DBROUTER

    path = tmp_path / "access.yml"
    path.write_text("users:\n  alice: {password_env: PW_UNSET_FOR_TEST, databases: ['*']}\n")
    env = {k: v for k, v in os.environ.items() if k != "PW_UNSET_FOR_TEST"}
    proc = subprocess.run([DBROUTER, "serve", "--warehouse", str(tmp_path / "kb.duckdb"), "--access", str(path),
                           "--port", "0"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "alice ($PW_UNSET_FOR_TEST)" in proc.stderr and "Traceback" not in proc.stderr
