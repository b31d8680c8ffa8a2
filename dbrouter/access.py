"""Who may see which databases: the access policy and the session scope built from it.

A policy file (YAML) maps users, directly or through roles, to the databases they may see, as
exact names or shell patterns, and names the environment variable holding each user's password::

    roles:
      analyst: [concert_singer, "flight_*"]
    users:
      alice: {password_env: DBROUTER_PW_ALICE, roles: [analyst]}
      admin: {password_env: DBROUTER_PW_ADMIN, databases: ["*"]}

A restricted session sets the session variable ``dbrouter_allowed_databases`` to its databases
(:func:`scope_ddl`); the KB's view ``kb_allowed_databases`` reads it, routing filters candidates
through that view *before* ranking, and retrieval through it, so no output names a hidden database.
"""

from __future__ import annotations

import fnmatch
import hmac
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from dbrouter.connection import SCOPE_VARIABLE, Connection
from dbrouter.errors import AccessError

NO_ACCESSIBLE_DATABASE = "no database you can access answers this"
"""What a restricted caller is told when routing finds nothing among its databases."""


@dataclass(frozen=True)
class UserAccess:
    """One user: the patterns of the databases they may see and where their password is."""

    name: str
    patterns: tuple[str, ...]
    password_env: str

    def allowed(self, databases: list[str]) -> list[str]:
        """The databases of ``databases`` this user may see, in order.

        Args:
            databases: every database of the KB.

        Returns:
            Those matching one of the user's patterns.
        """
        return [d for d in databases if any(fnmatch.fnmatchcase(d, p) for p in self.patterns)]

    @property
    def sees_all(self) -> bool:
        """``"*"`` among the user's patterns: every database, now and after any rebuild (an admin):
        the session is not scoped and may browse the whole knowledge base, as without a policy."""
        return "*" in self.patterns


@dataclass(frozen=True)
class AccessPolicy:
    """Users by name."""

    users: dict[str, UserAccess]

    def authenticate(self, user: str, password: str | None) -> UserAccess:
        """The user, when ``password`` is theirs (compared in constant time).

        Args:
            user: the user name.
            password: the password given.

        Returns:
            The user's access.

        Raises:
            AccessError: unknown user, wrong password, or the user's password variable unset (one
                message for all: it does not tell which users exist).
        """
        access = self.users.get(user)
        expected = os.environ.get(access.password_env, "") if access else ""
        given = password or ""
        if access is None or not expected or not hmac.compare_digest(given.encode(), expected.encode()):
            raise AccessError(f"user {user!r} could not be authenticated: check the user name and the password "
                              "(the policy names each user's password variable)")
        return access


    def check_passwords(self, users: list[str] | None = None) -> None:
        """Refuse to start when a user's password variable is unset: every login of that user would fail.

        Args:
            users: only these users (None: every user of the policy).

        Raises:
            AccessError: naming each user and the variable to set.
        """
        unset = [(name, a.password_env) for name, a in self.users.items()
                 if (users is None or name in users) and not os.environ.get(a.password_env)]
        if unset:
            shown = ", ".join(f"{name} (${env})" for name, env in unset)
            raise AccessError(f"access policy: the password variable of {len(unset)} user(s) is unset or empty: "
                              f"{shown}; set it in the environment before starting (every login of such a user "
                              "would fail)")


class LoginThrottle:
    """Failed logins per client address: ``limit`` failures within ``window`` seconds lock the address
    out until the oldest is older than the window (what `dbrouter serve` and `dbrouter mcp --http`
    answer a password guesser; 9,663 guesses in 10 s went through before).

    Args:
        limit: failures an address may have within the window.
        window: seconds.
    """

    def __init__(self, limit: int, window: float = 60.0) -> None:
        self.limit, self.window = limit, window
        self._failures: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def blocked(self, address: str) -> bool:
        """True while ``address`` has ``limit`` failures within the window."""
        now = time.monotonic()
        with self._lock:
            recent = [t for t in self._failures.get(address, []) if now - t < self.window]
            if recent:
                self._failures[address] = recent
            else:
                self._failures.pop(address, None)
            return len(recent) >= self.limit

    def failed(self, address: str) -> None:
        """Count a failed login of ``address`` (at most 10,000 addresses are remembered)."""
        with self._lock:
            if len(self._failures) >= 10_000 and address not in self._failures:
                self._failures.pop(next(iter(self._failures)))
            self._failures.setdefault(address, []).append(time.monotonic())


def _strings(value, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise AccessError(f"{where} must be a list of database names or patterns, got {value!r}")
    return tuple(value)


def load_policy(path: str | Path) -> AccessPolicy:
    """Read a policy file.

    Args:
        path: the YAML file (``roles:`` optional, ``users:`` required).

    Returns:
        The policy.

    Raises:
        AccessError: the file is missing or malformed (the message names the entry).
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise AccessError(f"access policy {path}: cannot read it ({exc})") from None
    if not isinstance(data, dict) or set(data) - {"roles", "users"} or not isinstance(data.get("users"), dict):
        raise AccessError(f"access policy {path}: expected `users:` (and optional `roles:`) at the top level")
    roles = data.get("roles") or {}
    if not isinstance(roles, dict):
        raise AccessError(f"access policy {path}: `roles:` must map role names to database lists")
    role_dbs = {name: _strings(dbs, f"{path}: role {name}") for name, dbs in roles.items()}
    users = {}
    for name, entry in data["users"].items():
        if not isinstance(entry, dict) or set(entry) - {"password_env", "roles", "databases"}:
            raise AccessError(f"{path}: user {name}: expected password_env, roles and/or databases")
        if not isinstance(entry.get("password_env"), str) or not entry["password_env"]:
            raise AccessError(f"{path}: user {name}: password_env (the environment variable holding the password) "
                              "is required")
        patterns = list(_strings(entry.get("databases", []), f"{path}: user {name}: databases"))
        for role in _strings(entry.get("roles", []), f"{path}: user {name}: roles"):
            if role not in role_dbs:
                raise AccessError(f"{path}: user {name}: unknown role {role!r} (roles: {', '.join(role_dbs) or 'none'})")
            patterns += role_dbs[role]
        users[str(name)] = UserAccess(str(name), tuple(patterns), entry["password_env"])
    return AccessPolicy(users)


def scope_ddl(databases: list[str] | None) -> str:
    """The statement that restricts a DuckDB session (connection or cursor) to ``databases``.

    Args:
        databases: the databases the session may see (may be empty); None lifts the restriction.

    Returns:
        ``set variable dbrouter_allowed_databases = [...]`` (or ``reset variable ...``).
    """
    if databases is None:
        return f"reset variable {SCOPE_VARIABLE}"
    values = ", ".join("'" + d.replace("'", "''") + "'" for d in databases)
    return f"set variable {SCOPE_VARIABLE} = [{values}]::varchar[]"


def restrict(con: Connection, access: UserAccess | None) -> None:
    """Scope a DuckDB session to ``access``'s databases of the KB (None lifts the scope).

    Args:
        con: the session's connection or cursor on the warehouse.
        access: the user, or None for every database.
    """
    if access is None:
        con.execute(scope_ddl(None))
        return
    every = [r[0] for r in con.execute("select db_id from main.kb_databases order by db_id").fetchall()]
    allowed = access.allowed(every)
    con.execute(scope_ddl(allowed))
    _check_scope(con, allowed)


def check_scopable(con: Connection) -> None:
    """Refuse a KB whose routing does not honour the session's scope, before serving it under a
    policy: scoped to no database, its ``kb_allowed_databases`` must be empty.

    Args:
        con: a connection or cursor on the warehouse (its scope is lifted afterwards).

    Raises:
        AccessError: the KB was built before access scopes (see :func:`_check_scope`).
    """
    con.execute(scope_ddl([]))
    try:
        _check_scope(con, [])
    finally:
        con.execute(scope_ddl(None))


def _check_scope(con: Connection, allowed: list[str]) -> None:
    """Fail closed unless the session's ``kb_allowed_databases`` holds only ``allowed``: a KB built
    before access scopes has no such view, or one that ignores the session variable, and its routing
    functions rank every database whatever the scope says."""
    import duckdb

    try:
        seen = {r[0] for r in con.execute("select db_id from main.kb_allowed_databases").fetchall()}
    except duckdb.CatalogException:
        seen = None
    if seen is None or not seen <= set(allowed):
        raise AccessError("this knowledge base was built before access policies: its routing functions do not "
                          "filter by user, so it is not served under a policy; rebuild it with this version "
                          "(`dbrouter build`)")


def glob_to_like(pattern: str) -> str:
    """A policy's shell pattern as a SQL LIKE pattern with ``\\`` as its escape character (Snowflake's
    role grants: ``*`` -> ``%``, ``?`` -> ``_``, a literal ``%``, ``_`` or ``\\`` escaped).

    Args:
        pattern: an exact name or a shell pattern (``flight_*``); ``[...]`` classes are refused.

    Returns:
        The LIKE pattern, case-sensitive as :func:`fnmatch.fnmatchcase` is.

    Raises:
        AccessError: the pattern has a ``[...]`` class, which LIKE cannot express.
    """
    if "[" in pattern:
        raise AccessError(f"database pattern {pattern!r}: use * and ? only on Snowflake ([...] classes have no LIKE form)")
    out = []
    for ch in pattern:
        out.append("%" if ch == "*" else "_" if ch == "?" else "\\" + ch if ch in "%_\\" else ch)
    return "".join(out)


def load_roles(path: str | Path) -> dict[str, tuple[str, ...]]:
    """The ``roles:`` of a policy file, for Snowflake, where the warehouse's own roles authenticate
    (``users:`` and their passwords are not needed and not read).

    Args:
        path: the YAML file.

    Returns:
        Role name -> database names or patterns.

    Raises:
        AccessError: the file is missing, malformed, or has no roles.
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise AccessError(f"access policy {path}: cannot read it ({exc})") from None
    roles = data.get("roles") if isinstance(data, dict) else None
    if not isinstance(roles, dict) or not roles:
        raise AccessError(f"access policy {path}: Snowflake grants come from `roles:` (role name -> databases), "
                          "and there is none")
    return {str(name): _strings(dbs, f"{path}: role {name}") for name, dbs in roles.items()}


RESTRICTED_READABLE = frozenset({"kb_allowed_databases"})
"""The one relation a restricted session may name: its own databases."""


def check_restricted(sql: str) -> None:
    """Refuse a restricted session's statement that reads a relation: it may call the routing and
    retrieval functions (which filter on its databases), not read the KB's tables (which hold every
    database) or the catalog.

    Args:
        sql: one read-only SELECT (already checked), DuckDB dialect.

    Raises:
        AccessError: the statement names a table or view other than its own CTEs and
            ``kb_allowed_databases``, or cannot be parsed.
    """
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.ParseError:
        raise AccessError("a restricted user's statement must be a plain call of the routing functions") from None
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            continue  # a table function: route_query_ranked(...), retrieve_examples(...), unnest(...)
        name = table.name.lower()
        if (name in ctes and not table.db) or (name in RESTRICTED_READABLE and table.db in ("", "temp")):
            continue
        raise AccessError(f"permission denied for relation {table.sql(dialect='duckdb')}: under the access policy "
                          "this user calls the routing and retrieval functions (route_query, route_query_ranked, "
                          "retrieve_examples, ...), which see only the user's databases")
