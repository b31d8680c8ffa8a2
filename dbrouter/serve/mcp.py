"""`dbrouter mcp`: the knowledge base as a Model Context Protocol server (the official ``mcp`` SDK).

An MCP client *is* an LLM, so route -> link -> the agent writes SQL -> ``run_sql`` answers
questions with no LLM configured in dbrouter. The tools (:data:`TOOLS` lists their names):

* ``list_databases`` - every database with its description and size;
* ``describe`` - a database's tables, or one table's columns (types, keys, descriptions, samples);
* ``route`` - which databases answer a question: ranking, evidence, abstention;
* ``link`` - the tables and columns a question needs, as a prompt-ready schema;
* ``retrieve`` - the domain statements and question/SQL examples closest to a question;
* ``run_sql`` - one read-only SELECT on a database's source, through ``ask``'s guard, read-only
  session, timeout and row cap;
* ``ask`` - question to answer with dbrouter's own SQL generation (registered only when an LLM is
  configured: ``DBROUTER_LLM_BASE_URL``).

Every call gets a cursor of its own on the warehouse (:meth:`KnowledgeBase.cursor`: reopened after
a rebuild, interrupted after the timeout). Bad arguments and refused SQL are tool errors (the
result's ``isError``); the server keeps serving. Transport: stdio (default), or streamable HTTP on
loopback with ``--http``; a non-loopback ``--host`` needs ``--allow-remote`` and a password
(``--password-env``), which HTTP clients send as ``Authorization: Bearer <password>``.
"""

from __future__ import annotations

import contextlib
import hmac
import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from mcp.server.mcpserver import Context  # the tools' annotation: resolved from this module's globals

from dbrouter.access import (
    NO_ACCESSIBLE_DATABASE,
    AccessError,
    AccessPolicy,
    LoginThrottle,
    UserAccess,
    check_scopable,
    restrict,
)
from dbrouter.errors import DbrouterError, NoDatabase
from dbrouter.feedback.log import ClientBudget, LogEntry, log_path, record
from dbrouter.linking import MAX_COLUMNS

if TYPE_CHECKING:
    from dbrouter.answer.ask import Answer
    from dbrouter.routing.route import RouteResult

T = TypeVar("T")

TOOLS = ("list_databases", "describe", "route", "link", "retrieve", "run_sql", "ask")
"""The tools, in the order clients list them (``ask`` only with an LLM configured)."""

MAX_K = 20
MAX_LINK_COLUMNS = 200
"""Most columns a caller may ask ``link`` to hand on (the schema text grows with them)."""
"""Most candidates, statements or examples one call returns."""
MAX_DESCRIBED_COLUMNS = 400
"""Columns ``describe`` lists for a whole database; a wider one lists its tables' sizes (ask per table)."""
MAX_RESULT_ROWS = 500
"""Most rows ``run_sql`` returns."""
SQL_TIMEOUT = 30.0
"""Seconds a ``run_sql`` statement may run (as ``ask``)."""
MAX_SQL_CHARS = 20_000
"""Longest SQL text ``run_sql`` accepts."""


@dataclass
class McpConfig:
    """How to serve: the warehouse, the transport and, for HTTP, the address and password."""

    warehouse: Path
    http: bool = False
    host: str = "127.0.0.1"
    port: int = 8765
    password: str | None = None
    allow_remote: bool = False
    policy: AccessPolicy | None = None
    user: UserAccess | None = None
    log: bool = True


def _bounded(value: int, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise DbrouterError(f"{name} must be a whole number from {low} to {high}, got {value!r}")
    return value


def _cell(value: Any) -> Any:
    from dbrouter.answer.ask import json_value

    return json_value(value)


class Tools:
    """The tools' implementations over one warehouse (plain methods: tested without a transport).

    Args:
        warehouse: the KB file (opened read-only, reopened after a rebuild).
        llm: the LLM client for ``ask`` and the phrase mapping of ``route``/``link`` (None: not configured).
    """

    def __init__(self, warehouse: Path, llm=None, policy: AccessPolicy | None = None,
                 user: UserAccess | None = None, log: bool = True) -> None:
        from dbrouter.serve.knowledge import KnowledgeBase

        self.kb = KnowledgeBase(warehouse)
        if policy is not None:  # fail at start, not at each call (which fails closed too)
            try:
                with self.kb.cursor(shared=True) as con:
                    check_scopable(con)
            except AccessError:
                self.kb.close()
                raise
        self.llm = llm
        self.policy = policy
        self.user = user
        self.log = log_path(warehouse) if log else None
        self.log_budget = ClientBudget()  # what each caller may add to the log per hour
        self._lock = threading.Lock()  # one call at a time: a warehouse connection is not shared across threads

    @contextlib.contextmanager
    def _kb(self, caller: UserAccess | None, own: bool = False) -> Generator[Any]:
        """The warehouse for one call, scoped to the caller's databases under a policy.

        Args:
            caller: who asks (None: the stdio user, or nobody without a policy).
            own: a cursor of the call's own instead of the shared connection, so the call does not
                hold the others up (``ask`` waits seconds for the LLM); it costs the route-path macros.
        """
        caller = caller or self.user
        if self.policy is not None and caller is None:
            raise DbrouterError("this server has an access policy: authenticate (see dbrouter mcp --access)")
        with contextlib.ExitStack() as stack:
            if not own:
                stack.enter_context(self._lock)
            con = stack.enter_context(self.kb.cursor(shared=not own))
            restrict(con, caller)
            yield con

    def _llm(self):
        """The configured LLM for one call (its own time budget), or None.

        With an LLM, ``route``, ``link`` and ``ask`` all route with its phrase mapping, as the CLI
        does, so the three choose the same database for a question; such a call takes a cursor of
        its own (``_kb(own=True)``) so its wait for the LLM holds no other call up.
        """
        return self.llm.fresh() if self.llm is not None else None

    def close(self) -> None:
        """Close the warehouse."""
        self.kb.close()

    def logged(self, tool: str, caller: UserAccess | None, call: Callable[[], T], question: str | None = None,
               db: str | None = None, sql: str | None = None,
               entry_of: Callable[[T, LogEntry], LogEntry] | None = None) -> T:
        """Run one tool call and append it to the query log (``dbrouter report``), failed or not.

        Args:
            tool: ``route``, ``link``, ``run_sql`` or ``ask``.
            caller: who asked.
            call: the call (no arguments).
            question: the question asked.
            db: the database asked for.
            sql: the SQL given.
            entry_of: the entry of the call's result (:func:`dbrouter.feedback.log.record`).

        Returns:
            The call's result.
        """
        who = caller or self.user
        base = LogEntry("mcp", tool, question if isinstance(question, str) else None,
                        user=who.name if who else None, chosen=db, sql=sql)
        return record(self.log, base, call, entry_of, self.log_budget, base.user or "")

    def list_databases(self, caller: UserAccess | None = None) -> list[dict[str, Any]]:
        """Every database: ``db_id``, description, source type, tables, columns, examples, statements."""
        with self._kb(caller) as con:
            rows = con.execute("select db_id, database_description, source_type, n_tables, n_columns, n_examples, "
                               "n_statements from kb_databases where db_id in (select db_id from kb_allowed_databases) "
                               "order by db_id").fetchall()
        keys = ("db_id", "description", "source_type", "tables", "columns", "examples", "statements")
        return [dict(zip(keys, r)) for r in rows]

    def describe(self, db: str, table: str | None = None, caller: UserAccess | None = None) -> dict[str, Any]:
        """A database's tables and columns, or one table's columns.

        Args:
            db: the database.
            table: one of its tables (None: the whole database; beyond
                :data:`MAX_DESCRIBED_COLUMNS` columns only the tables are listed).

        Returns:
            ``{db_id, tables: [{table, description, rows, columns: [...]}]}``.
        """
        from dbrouter.linking.columns import all_columns
        from dbrouter.retrieval import require_database

        with self._kb(caller) as con:
            require_database(con, db)
            tables = con.execute("select table_name, table_description, row_count, n_columns from kb_tables "
                                 "where db_id = ? and (? is null or table_name = ?) order by table_name",
                                 [db, table, table]).fetchall()
            if table is not None and not tables:
                import difflib

                known = [r[0] for r in con.execute("select table_name from kb_tables where db_id = ?", [db]).fetchall()]
                close = difflib.get_close_matches(table, known, n=3)
                raise DbrouterError(f"table {table!r} is not in {db}" + (f"; did you mean {', '.join(close)}?" if close
                                                                          else f" ({len(known)} tables)"))
            total = sum(int(r[3] or 0) for r in tables)
            listed = table is not None or total <= MAX_DESCRIBED_COLUMNS
            columns = [c for c in all_columns(con, db) if table is None or c.table == table] if listed else []
        by_table: dict[str, list[dict[str, Any]]] = {}
        for c in columns:
            by_table.setdefault(c.table, []).append(
                {"column": c.column, "type": c.data_type, "primary_key": c.primary_key, "references": c.references,
                 "description": c.description, "samples": list(c.samples[:5])})
        out: dict[str, Any] = {"db_id": db, "tables": [
            {"table": t, "description": d, "rows": n, "n_columns": nc, **({"columns": by_table.get(t, [])} if listed
                                                                          else {})}
            for t, d, n, nc in tables]}
        if not listed:
            out["note"] = (f"{db} has {total} columns: only its tables are listed; call describe with a table "
                           "for its columns, or link with the question")
        return out

    def route(self, question: str, k: int = 3, caller: UserAccess | None = None) -> dict[str, Any]:
        """Which databases can answer ``question``.

        Args:
            question: the question.
            k: candidates returned (1 to :data:`MAX_K`).

        Returns:
            ``{best, abstained, reason, ranking: [{rank, db_id, score, evidence}]}``.
        """
        return self.route_json(self.routed(question, k, caller), caller)

    def routed(self, question: str, k: int = 3, caller: UserAccess | None = None) -> RouteResult:
        """The ranking behind :meth:`route` (logged as it is)."""
        from dbrouter.answer.ask import check_question
        from dbrouter.routing.route import route

        text = check_question(question)
        k = _bounded(k, "k", 1, MAX_K)
        llm = self._llm()
        with self._kb(caller, own=llm is not None) as con:
            return route(con, text, k=k, llm=llm)

    def route_json(self, result: RouteResult, caller: UserAccess | None = None) -> dict[str, Any]:
        """:meth:`route`'s answer from the ranking: under a policy, no answer says the caller sees no database."""
        reason = result.reason
        if (caller or self.user) is not None and result.best is None:
            reason = NO_ACCESSIBLE_DATABASE + (f" ({reason})" if reason else "")
        return {"best": result.best, "abstained": result.abstained, "reason": reason,
                "ranking": [c.to_dict() for c in result.candidates]}

    def link(self, question: str, db: str | None = None, caller: UserAccess | None = None,
             max_columns: int = MAX_COLUMNS) -> dict[str, Any]:
        """The tables and columns ``question`` needs, with the prompt-ready schema text.

        Args:
            question: the question.
            db: the database (None: the routed one; an abstention is an error naming the closest).
            max_columns: most columns handed on (1 to :data:`MAX_LINK_COLUMNS`).

        Returns:
            ``{db_id, routed, tables, columns, schema, notes}``.
        """
        from dbrouter.answer.ask import check_question
        from dbrouter.linking.link import link_question

        text = check_question(question)
        max_columns = _bounded(max_columns, "max_columns", 1, MAX_LINK_COLUMNS)
        llm = self._llm()
        with self._kb(caller, own=llm is not None) as con:
            try:
                done = link_question(con, text, db, llm=llm, max_columns=max_columns, flag="db")
            except NoDatabase:
                if (caller or self.user) is not None:
                    raise NoDatabase(NO_ACCESSIBLE_DATABASE) from None
                raise
        return {"db_id": done.db_id, "routed": done.routed, "tables": done.linked.tables,
                "columns": done.linked.names, "schema": done.schema, "notes": done.linked.notes}

    def retrieve(self, question: str, db: str | None = None, k: int = 4,
                 caller: UserAccess | None = None) -> dict[str, Any]:
        """Domain statements and question/SQL examples close to ``question``.

        Args:
            question: the question.
            db: only this database's (None: every database's).
            k: statements and examples each (1 to :data:`MAX_K`).

        Returns:
            ``{statements: [...], examples: [...]}``.
        """
        from dbrouter.answer.ask import check_question
        from dbrouter.retrieval import require_database, retrieve_examples, retrieve_statements

        text = check_question(question)
        k = _bounded(k, "k", 1, MAX_K)
        with self._kb(caller) as con:
            if db is not None:
                require_database(con, db)
            statements = retrieve_statements(con, text, db, k)
            examples = retrieve_examples(con, text, db, k)
        return {"statements": [{"db_id": s.db_id, "statement": s.statement, "expression": s.expression,
                                "score": s.score} for s in statements],
                "examples": [{"db_id": e.db_id, "question": e.question, "sql": e.sql, "stage": e.stage,
                              "score": e.score} for e in examples]}

    def run_sql(self, db: str, sql: str, max_rows: int = 100, caller: UserAccess | None = None) -> dict[str, Any]:
        """Run one read-only SELECT on ``db``'s source.

        Args:
            db: the database.
            sql: one SELECT in the source's dialect (anything else is refused before it runs).
            max_rows: rows returned (1 to :data:`MAX_RESULT_ROWS`); more are counted.

        Returns:
            ``{db_id, dialect, columns, rows, total_rows, truncated, seconds}``.

        Raises:
            DbrouterError: unknown database, no data source, refused SQL, or the database's error.
        """
        from dbrouter.execute.runners import execute, target_for

        if not isinstance(sql, str) or not sql.strip():
            raise DbrouterError("sql must be one SELECT statement")
        if len(sql) > MAX_SQL_CHARS:
            raise DbrouterError(f"sql is {len(sql):,} characters; at most {MAX_SQL_CHARS:,} are accepted")
        max_rows = _bounded(max_rows, "max_rows", 1, MAX_RESULT_ROWS)
        with self._kb(caller) as con:
            target = target_for(con, db)
        result = execute(target, sql, timeout=SQL_TIMEOUT, row_cap=max_rows)
        if result.timed_out:
            raise DbrouterError(f"the statement ran longer than {SQL_TIMEOUT:.0f} s and was stopped")
        if result.error:
            raise DbrouterError(f"{db} ({target.dialect}) refused the statement: {result.error}")
        return {"db_id": db, "dialect": target.dialect, "columns": result.columns,
                "rows": [[_cell(v) for v in row] for row in result.rows], "total_rows": result.total_rows,
                "truncated": result.truncated, "seconds": round(result.seconds, 3)}

    def ask(self, question: str, db: str | None = None, caller: UserAccess | None = None) -> dict[str, Any]:
        """Answer with dbrouter's own SQL generation (needs the configured LLM).

        Args:
            question: the question.
            db: the database (None: routed).

        Returns:
            ``ask``'s answer as JSON (``dbrouter ask --json``).
        """
        return self.answered(question, db, caller).to_json()

    def answered(self, question: str, db: str | None = None, caller: UserAccess | None = None) -> Answer:
        """The answer behind :meth:`ask` (logged as it is)."""
        from dbrouter.answer.ask import ask

        with self._kb(caller, own=True) as con:
            return ask(con, question, db, llm=self._llm())


def build_server(tools: Tools):
    """The MCP server exposing ``tools`` (``ask`` only when an LLM is configured).

    Args:
        tools: the implementations.

    Returns:
        An ``mcp.server.mcpserver.MCPServer``.
    """
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from dbrouter.answer.ask import Answer
    from dbrouter.routing.route import RouteResult

    server = MCPServer("dbrouter", log_level="WARNING", instructions=(
        "dbrouter knows many databases. To answer a data question: route it (which database), link it (the "
        "tables and columns it needs, as a schema), write one SELECT in the database's dialect from that "
        "schema, and run it with run_sql. retrieve gives domain rules and example queries; describe and "
        "list_databases browse the catalogue."))

    @contextlib.contextmanager
    def errors() -> Generator[None]:
        """A refused call is a tool error with its message; the server keeps serving."""
        try:
            yield
        except DbrouterError as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:  # a warehouse error or timeout: the call fails, the server stays
            raise ToolError(f"{type(exc).__name__}: {' '.join(str(exc).split())[:500]}") from None

    def caller(ctx: Context) -> UserAccess | None:
        """Under a policy over HTTP, the user of this request's credentials (checked again here)."""
        if tools.policy is None:
            return None
        headers = ctx.headers
        if headers is None:  # stdio: the user the server was started for
            return tools.user
        credentials = basic_credentials(headers.get("authorization"))
        if credentials is None:
            raise ToolError("authenticate with HTTP Basic credentials (user:password)")
        try:
            return tools.policy.authenticate(*credentials)
        except DbrouterError as exc:
            raise ToolError(str(exc)) from None

    @server.tool(description="List every database dbrouter knows: db_id, description, source type, number of "
                             "tables, columns, examples and statements.")
    def list_databases(ctx: Context) -> dict[str, Any]:
        with errors():
            return {"databases": tools.list_databases(caller(ctx))}

    @server.tool(description="Describe a database (its tables with their columns) or one table (table=...): "
                             "column types, primary keys, references, descriptions and sample values. A very "
                             "wide database lists only its tables: then ask per table.")
    def describe(db: str, ctx: Context, table: str | None = None) -> dict[str, Any]:
        with errors():
            return tools.describe(db, table, caller(ctx))

    @server.tool(description="Route a natural-language question: which databases can answer it, ranked, with the "
                             "evidence (matched tables/columns, join path) and whether dbrouter abstains (no "
                             "database answers it). k = candidates (1-20).")
    def route(question: str, ctx: Context, k: int = 3) -> dict[str, Any]:
        with errors():
            who = caller(ctx)
            result = tools.logged("route", who, lambda: tools.routed(question, k, who), question,
                                  entry_of=RouteResult.log_entry)
            return tools.route_json(result, who)

    @server.tool(description="Link a question to the tables and columns it needs, as a prompt-ready schema (types, "
                             "keys, samples) to write SQL from. db = the database (default: the routed one); "
                             f"max_columns = most columns handed on (1-{MAX_LINK_COLUMNS}, default {MAX_COLUMNS}; "
                             "wide databases are linked tables first).")
    def link(question: str, ctx: Context, db: str | None = None, max_columns: int = MAX_COLUMNS) -> dict[str, Any]:
        with errors():
            who = caller(ctx)
            return tools.logged("link", who, lambda: tools.link(question, db, who, max_columns), question, db,
                                entry_of=lambda out, base: replace(base, chosen=out["db_id"]))

    @server.tool(description="Retrieve the domain statements (business rules, definitions) and question/SQL "
                             "examples closest to a question, optionally of one database. k = each (1-20).")
    def retrieve(question: str, ctx: Context, db: str | None = None, k: int = 4) -> dict[str, Any]:
        with errors():
            return tools.retrieve(question, db, k, caller(ctx))

    @server.tool(description="Run one read-only SELECT on a database's source (its own dialect; see "
                             "list_databases' source_type) and return at most max_rows rows (1-500). Anything but "
                             "one SELECT is refused; statements stop after 30 s.")
    def run_sql(db: str, sql: str, ctx: Context, max_rows: int = 100) -> dict[str, Any]:
        with errors():
            who = caller(ctx)
            return tools.logged("run_sql", who, lambda: tools.run_sql(db, sql, max_rows, who), None, db, sql)

    if tools.llm is not None:
        @server.tool(description="Answer a question end to end with dbrouter's own SQL generation (route, link, "
                                 "generate with voting and repair, run read-only). db = force a database.")
        def ask(question: str, ctx: Context, db: str | None = None) -> dict[str, Any]:
            with errors():
                who = caller(ctx)
                answer = tools.logged("ask", who, lambda: tools.answered(question, db, who), question, db,
                                      entry_of=Answer.log_entry)
                return answer.to_json()

    return server


def basic_credentials(header: str | None) -> tuple[str, str] | None:
    """(user, password) of an ``Authorization: Basic ...`` header, or None.

    Args:
        header: the header's value.

    Returns:
        The credentials, or None when the header is missing or not Basic.
    """
    import base64
    import binascii

    if not header or not header.lower().startswith("basic "):
        return None
    try:
        user, sep, password = base64.b64decode(header[6:].strip(), validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return (user, password) if sep else None


def auth_guard(app, password: str | None = None, policy: AccessPolicy | None = None):
    """ASGI middleware: HTTP requests without valid credentials get 401 - a policy's users with
    HTTP Basic (user:password), or else ``Authorization: Bearer <password>``.

    Args:
        app: the ASGI application.
        password: the server's one password (no policy).
        policy: the access policy (its users' passwords).

    Returns:
        The guarded application.
    """
    import anyio

    from dbrouter.serve import AUTH_FAILURE_DELAY, AUTH_FAILURES

    expected = f"Bearer {password}".encode() if password else None
    logins = LoginThrottle(AUTH_FAILURES)

    def allowed(header: bytes) -> bool:
        if policy is not None:
            credentials = basic_credentials(header.decode("latin-1"))
            try:
                return credentials is not None and bool(policy.authenticate(*credentials))
            except DbrouterError:
                return False
        return expected is not None and hmac.compare_digest(header, expected)

    async def guarded(scope, receive, send):
        address = (scope.get("client") or ("?", 0))[0]
        if scope["type"] == "http" and logins.blocked(address):
            await send({"type": "http.response.start", "status": 429,
                        "headers": [(b"content-type", b"text/plain"), (b"retry-after", b"60")]})
            await send({"type": "http.response.body", "body": b"dbrouter mcp: too many failed logins from this "
                        b"address: try again in a minute"})
            return
        if scope["type"] == "http" and not allowed(dict(scope.get("headers") or []).get(b"authorization", b"")):
            logins.failed(address)
            await anyio.sleep(AUTH_FAILURE_DELAY)
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"text/plain"),
                                    (b"www-authenticate", b"Basic" if policy is not None else b"Bearer")]})
            await send({"type": "http.response.body", "body": b"dbrouter mcp: authentication required ("
                        + (b"HTTP Basic user:password" if policy is not None else b"Bearer <password>") + b")"})
            return
        await app(scope, receive, send)

    return guarded


def run(config: McpConfig, llm=None, log=None) -> None:
    """Serve until interrupted (stdio: until the client closes stdin).

    Args:
        config: what and how to serve.
        llm: the LLM client for ``ask`` (None: the tool is not offered).
        log: progress output (stderr; stdout is the stdio transport's).

    Raises:
        ServeError: a non-loopback host without ``--allow-remote`` and a password.
    """
    from dbrouter.serve.endpoint import check_host

    tools = Tools(config.warehouse, llm, config.policy, config.user, log=config.log)
    try:
        server = build_server(tools)
        if not config.http:
            if log:
                log(f"dbrouter mcp: serving {config.warehouse} over stdio")
            server.run("stdio")
            return
        check_host(config.host, config.allow_remote, config.password or ("policy" if config.policy else None))
        import anyio
        import uvicorn

        from dbrouter.serve.mcp_sessions import (
            MAX_SESSIONS,
            SESSION_IDLE_SECONDS,
            caller_of_scope,
            session_limits,
        )

        app = server.streamable_http_app(host=config.host, session_idle_timeout=SESSION_IDLE_SECONDS,
                                         max_sessions=MAX_SESSIONS)
        app = session_limits(app, lambda scope: caller_of_scope(scope, basic_credentials))
        if config.password or config.policy is not None:  # outermost: a caller is counted once authenticated
            app = auth_guard(app, config.password, config.policy)
        if log:
            auth = ("the policy's users (HTTP Basic)" if config.policy else "password required" if config.password
                    else "no password")
            log(f"dbrouter mcp: serving {config.warehouse} on http://{config.host}:{config.port}/mcp ({auth}); "
                "Ctrl-C stops")
        uv = uvicorn.Server(uvicorn.Config(app, host=config.host, port=config.port, log_level="warning"))
        anyio.run(uv.serve)
    finally:
        tools.close()
