"""The access policy: loading (with errors that name the entry), authentication, patterns, and the
session scope statement."""

import duckdb
import pytest

from dbrouter.serve.access import AccessError, load_policy, scope_ddl

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
