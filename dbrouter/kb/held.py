"""The routing query planned once per connection, over the KB tables it reads held in the process.

DuckDB 2.0 binds and optimises a statement again on every execution when it scans a table: its
optimiser marks a prepared statement that reads a database "always rebind". Only a statement that
scans no table keeps its plan. For the routing query that planning is most of a warm question
(about 60 % of it on spider-route: ~45 ms of ~100 ms at full speed).

So from a connection's second question on, :func:`held_route_json` answers on a cursor of its own
where every KB table the UDF path's ``route_query_json_udf`` and ``route_query_udf`` name is
replaced by an Arrow copy of the columns they name (``register``: a scan of a Python object, which DuckDB does not count as
reading a database), and the routing query is ``PREPARE``d there once: each question is an
``EXECUTE`` that skips parsing, binding and optimising. The question reaches the statement through
the UDF :data:`QUESTION_UDF`, which returns the question set for that cursor: as a parameter, which
the macro repeats, it made DuckDB bind the statement again on every ``EXECUTE``, and as a column of
a one-row subquery it made the routing query a correlated subquery, whose decorrelation carried the
question through every join (0.70x the p50 without it on spider-route, the same answers). The
answers are the same rows read by the same plan; ``tests/functional/test_held_route.py`` compares
them with the unheld route, and checks that the held statement is not planned again.

Only what makes this exact is held:

- a read-only connection (what ``dbrouter.connect`` opens by default): the tables cannot change
  under the copies. A connection that can write routes as before.
- ``kb_allowed_databases`` (the access scope) is the rows the caller's own view returns for the
  caller's ``dbrouter_allowed_databases`` at the time; a scope gets its own held cursor, made when
  the caller's variable has that value, so a restricted caller never reads another scope's rows.
- the UDF path's ``route_query_json`` without an LLM mapping (``dbrouter.route()``), and a
  ``dbrouter serve`` client's plain ``select route_query('...')`` / ``select route_query_json('...', k)``
  (:func:`pooled_statement`: cursors per scope that the server's sessions check out in turn, over
  one set of copies); other calls are planned as before.

The first question on a connection is answered without holding anything, so a one-question process
(``dbrouter route``) pays neither the copies nor the ``PREPARE``. A held answer is kept
(:mod:`dbrouter.kb.answers`, in the holder): the same scope, entry, ``k`` and question text again
is answered without running the statement.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from dbrouter.connection import SCOPE_VARIABLE
from dbrouter.kb.answers import MISSING, Answers

ENTRY = "route_query_json_udf"
"""The UDF path's ranking as JSON: what :func:`dbrouter.route` reads."""

HELD = {"route_query_json_udf": True, "route_query_udf": False}
"""The entry points held, each with whether it takes ``k`` after the question: ``route_query_json``
(``dbrouter.route()``) and ``route_query`` (what ``dbrouter serve``'s SQL clients call most)."""

MAX_HELD_ROWS = 2_000_000
"""Hold a KB only while the tables the route reads have at most this many rows together.

The held statement is planned without the question, so a table it reads by a join with the
question's words it reads whole. The three lexical tables were such tables until they came from
the UDF process by term (``dbrouter_term_postings``, adr-0030): they are no longer copied or
counted, and at 10,000 synthetic databases the rest is 872,645 rows, held at 0.70x the planned
p50 (97-99 against 132-144 ms, 40 questions, every answer equal). Before that (adr-0029, the
lexical tables counted and read whole): 0.70-0.75x at 855,069 rows (3,000 databases), 0.88-0.93x
at 1,698,773 (6,000), 1.0-1.07x at 2,835,924 (10,000). The bound lies between that last gain and
first loss. Since round 15 the join edges come from the UDF process too (``dbrouter_join_paths``):
662,593 rows at 10,000 databases, about 66 a synthetic database, so about 30,000 of them."""

QUESTION_UDF = "dbrouter_held_question"
"""The UDF a held statement reads its question from: ``dbrouter_held_question(key)`` is the question
last set for the held cursor ``key`` names (:data:`_QUESTIONS`). Registered with side effects, so
DuckDB calls it on every ``EXECUTE`` rather than folding it into the plan."""

MAX_SCOPES = 8
"""The held cursors kept per connection, one per access scope seen (least recently used dropped)."""

MAX_IDLE = 4
"""Idle held cursors kept per access scope in a pool (:func:`pooled_statement`): a busy endpoint's
sessions of one scope routing at once each check one out; more are made as needed, and closed
when returned beyond this many."""

MAX_KS = 16
"""The statements kept per held cursor, one per number of candidates asked (all dropped beyond)."""

_HOLDERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_COPIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a cursor's parent -> the copies its cursors share
_POOLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a parent -> its pool (a _Holder of idle lists)
_OUT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a caller's cursor -> the pooled cursor it has out
_LOCK = threading.Lock()
_QUESTIONS: dict[str, str] = {}  # a held cursor's key -> the question its next EXECUTE answers
_KEYS = itertools.count()
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STRING = re.compile(r"'(?:[^']|'')*'")


@dataclass
class _Holder:
    """What one connection holds: its KB tables' copies (once) and a prepared cursor per scope.

    It does not refer to the connection: the connection keys it weakly (:data:`_HOLDERS`), and
    closing the connection closes its cursors."""

    calls: int = 0
    usable: bool | None = None  # None: not checked yet
    columns: dict[str, list[str]] = field(default_factory=dict)  # table -> the columns the route names
    tables: dict[str, Any] | None = None  # table name -> pyarrow.Table of those columns
    scopes: OrderedDict = field(default_factory=OrderedDict)  # scope key -> _Scoped
    lock: threading.Lock = field(default_factory=threading.Lock)
    answers: Answers = field(default_factory=Answers)  # what the held statements answered (adr-0038)


def held_route_json(con: Any, question: str | None, k: int) -> str | None:
    """``route_query_json_udf(question, k)`` through the connection's held plan, or None.

    Args:
        con: the caller's connection or cursor (its scope is read on every call).
        question: the question (a str without NUL characters; None or anything else: not held).
        k: the number of candidates.

    Returns:
        The JSON ``route_query_json_udf`` returns, or None when this call is not held: not a DuckDB
        connection, one that can write, its first routing call, or a question that is not a str
        without NUL characters. The caller then routes as before. A question asked again under
        the same scope and ``k`` is answered from the connection's :class:`~dbrouter.kb.answers.Answers`.
    """
    answer = held_answer(con, ENTRY, question, k, con)  # copies kept as con's: its plain SQL names share them
    return None if answer is MISSING else answer


def held_answer(con: Any, entry: str, question: str | None, k: int | None = None, share: Any = None) -> Any:
    """``entry(question[, k])``'s one value through ``con``'s held plan, or :data:`~dbrouter.kb.answers.MISSING`.

    The answer is kept in the connection's :class:`~dbrouter.kb.answers.Answers` under the
    caller's scope, ``entry``, ``k`` and the question's exact text; the same call again is
    answered from there without running the statement.

    Args:
        con: the caller's connection or cursor (its scope is read on every call).
        entry: one of :data:`HELD`.
        question: the question (a str without NUL characters; None or anything else: not held).
        k: the number of candidates, for an entry that takes it.
        share: as :func:`held_statement`'s.

    Returns:
        The value, or ``MISSING`` when this call is not held (the caller plans it as before).
    """
    found = _held(con, entry, question, k, share)
    if found is None or not isinstance(question, str):  # the second: _held takes nothing else
        return MISSING
    holder, scope, scoped, name = found
    key = Answers.key(scope, entry, k, question)
    answer = holder.answers.get(key)
    if answer is not MISSING:
        return answer
    with scoped.lock:  # the question stays this call's until its row is read
        _QUESTIONS[scoped.key] = question
        answer = scoped.con.execute(f"EXECUTE {name}").fetchall()[0][0]
    holder.answers.put(key, answer, len(answer) if isinstance(answer, str) else 16)
    return answer


def held_statement(con: Any, entry: str, question: str | None, k: int | None = None,
                   share: Any = None) -> tuple[Any, str] | None:
    """The held cursor and the ``EXECUTE`` that answers ``entry(question[, k])`` for ``con``, or None.

    Args:
        con: the caller's connection or cursor (its scope is read on every call).
        entry: one of :data:`HELD`.
        question: the question (a str without NUL characters; None or anything else: not held).
        k: the number of candidates, for an entry that takes it.
        share: the connection ``con`` is a cursor of, whose cursors then share one set of copies
            (``dbrouter serve``'s sessions); None: ``con``'s own.

    Returns:
        (cursor, statement): run the statement on the cursor (``execute`` or ``sql``) for the
        entry's one row, before the next held call on ``con`` (the statement reads the question
        this call set for the cursor: ``dbrouter serve`` runs a session's statements one at a
        time); None when this call is not held (see :func:`held_route_json`).
    """
    found = _held(con, entry, question, k, share)
    if found is None or not isinstance(question, str):  # the second: _held takes nothing else
        return None
    _, _, scoped, name = found
    with scoped.lock:
        _QUESTIONS[scoped.key] = question
    return scoped.con, f"EXECUTE {name}"


@contextlib.contextmanager
def pooled_statement(con: Any, entry: str, question: str | None, k: int | None,
                     share: Any) -> Generator[tuple[Any, str] | None]:
    """A held cursor of ``share``'s pool and the ``EXECUTE`` that answers ``entry(question[, k])``
    for ``con``'s scope, the cursor the caller's alone until the block ends; or None.

    ``dbrouter serve``'s sessions: a cursor held for one session (:func:`held_statement`) served
    that session from its second call, and a client that opens a session per query (``psql -c``,
    a BI tool's short-lived connections) had every call planned (~100 ms more a call on
    spider-route). The pool's cursors are ``share``'s, prepared for one scope each, and outlive
    the sessions that used them: a session's first call is held once any session of its scope
    has routed. The pool's first call is not held (the copies are made on its second).

    Args:
        con: the caller's cursor (its scope is read on every call; ``kb_allowed_databases`` read
            there when a cursor is made for a scope).
        entry: one of :data:`HELD`.
        question: the question (a str without NUL characters; anything else: not held).
        k: the number of candidates, for an entry that takes it.
        share: the connection whose cursors the pool holds (a server's generation connection).

    Yields:
        (cursor, statement) to run and read inside the block, or None (not held: route as before).
        A block that raises closes the cursor instead of returning it.
    """
    found = _checkout(con, entry, question, k, share)
    if found is None or not isinstance(question, str):  # the second: _checkout takes nothing else
        yield None
        return
    pool, key, scoped, name = found
    _QUESTIONS[scoped.key] = question
    with _LOCK:
        _OUT[con] = scoped
    try:
        yield scoped.con, f"EXECUTE {name}"
    except BaseException:
        scoped.con.close()  # stopped or failed mid-statement: not handed to another session
        raise
    else:
        with pool.lock:
            idle = pool.scopes.get(key)
            if idle is not None and len(idle) < MAX_IDLE:
                idle.append(scoped)
                scoped = None
        if scoped is not None:  # its scope evicted meanwhile, or enough idle
            scoped.con.close()
    finally:
        with _LOCK:
            _OUT.pop(con, None)


def _checkout(con: Any, entry: str, question: str | None, k: int | None,
              share: Any) -> tuple[_Holder, str | None, _Scoped, str] | None:
    """An idle (or new) pooled cursor for ``con``'s scope with ``entry``'s statement prepared:
    (pool, scope key, cursor, statement name), or None (arguments: :func:`pooled_statement`)."""
    pool = _holder(_POOLS, share) if _holdable(entry, question, k) else None
    if pool is None:
        return None
    import duckdb

    with pool.lock:
        admitted, key = _admit(con, pool)  # the pool's first call: an endpoint asked one question
        if not admitted:
            return None
        idle = pool.scopes.setdefault(key, [])
        pool.scopes.move_to_end(key)
        while len(pool.scopes) > MAX_SCOPES:
            for old in pool.scopes.popitem(last=False)[1]:
                old.con.close()
        scoped = idle.pop() if idle else None
        try:
            if scoped is None:  # under the pool's lock: the copies are made once
                allowed = con.sql("select db_id from kb_allowed_databases").to_arrow_table()
                scoped = _prepare(con, pool, allowed, share, parent=share)
        except duckdb.InterruptException:
            raise
        except duckdb.Error as exc:
            _give_up(pool, share, exc)
            return None
    try:
        name = scoped.prepared(entry, None if k is None else int(k))  # a PREPARE: outside the lock
    except duckdb.InterruptException:
        scoped.con.close()
        raise
    except duckdb.Error as exc:
        scoped.con.close()
        with pool.lock:
            _give_up(pool, share, exc)
        return None
    return pool, key, scoped, name


def _give_up(holder: _Holder, share: Any, exc: Exception) -> None:
    """Stop holding for ``holder`` (the route names what the copies miss): close its cursors, drop
    its copies, and say so on stderr. The caller holds ``holder.lock``."""
    holder.usable = False
    for scoped in holder.scopes.values():
        for cursor in scoped if isinstance(scoped, list) else [scoped]:
            cursor.con.close()
    holder.scopes.clear()
    holder.tables = None
    if share is not None:
        with _LOCK:
            _COPIES.pop(share, None)
    print(f"dbrouter: routing is planned for every question on this connection: the routing query "
          f"could not be held ({str(exc).splitlines()[0]})", file=sys.stderr)


def _held(con: Any, entry: str, question: str | None, k: int | None = None,
          share: Any = None) -> tuple[_Holder, str | None, _Scoped, str] | None:
    """(holder, scope key, held cursor for ``con``'s scope, name of the statement answering
    ``entry`` with ``k``), or None when this call is not held (arguments: :func:`held_statement`)."""
    holder = _holder(_HOLDERS, con) if _holdable(entry, question, k) else None
    if holder is None:
        return None
    import duckdb  # here: an endpoint's CLI process (dbrouter route --endpoint) never loads it

    with holder.lock:
        admitted, key = _admit(con, holder)  # the first call: a one-question process pays no copies
        if not admitted:
            return None
        cursor = holder.scopes.get(key)
        # the caller's view under the caller's scope: the rows the route may consider, or the error
        # a malformed scope gives the planned route too
        allowed = con.sql("select db_id from kb_allowed_databases").to_arrow_table() if cursor is None else None
        try:
            if cursor is None:
                cursor = _prepare(con, holder, allowed, share)
                holder.scopes[key] = cursor
                while len(holder.scopes) > MAX_SCOPES:
                    _, old = holder.scopes.popitem(last=False)
                    old.con.close()
            else:
                holder.scopes.move_to_end(key)
            name = cursor.prepared(entry, None if k is None else int(k))
        except duckdb.InterruptException:  # the caller's time is up (interrupt()): not a reason to stop holding
            raise
        except duckdb.Error as exc:  # a KB whose route names what the copies miss: plan as before, and say so
            _give_up(holder, share, exc)
            return None
        return holder, key, cursor, name


def _holdable(entry: str, question: str | None, k: int | None) -> bool:
    """Whether a call could be held at all: a held entry point with ``k`` where it takes one, and a
    question that is a str without NUL characters."""
    return isinstance(question, str) and "\x00" not in question and entry in HELD and HELD[entry] == (k is not None)


def _holder(registry: weakref.WeakKeyDictionary, owner: Any) -> _Holder | None:
    """``owner``'s holder in ``registry`` (:data:`_HOLDERS`, :data:`_POOLS`), made on its first call;
    None for an owner that is not weakly referenceable (not a DuckDB connection dbrouter made)."""
    with _LOCK:
        try:
            holder = registry.get(owner)
        except TypeError:
            return None
        if holder is None:
            holder = registry[owner] = _Holder()
        return holder


def _admit(con: Any, holder: _Holder) -> tuple[bool, str | None]:
    """Count a routing call on ``holder`` (whose lock the caller holds) and say whether it is held:
    not the first call (which pays nothing for the copies), on a KB worth holding (:func:`_usable`,
    checked once). Returns (held, the key of the caller's scope): the scope variable's value
    itself, read from ``con`` on every call, so another value gets another cursor."""
    holder.calls += 1
    if holder.calls == 1:
        return False, None
    if holder.usable is None:
        holder.usable = _usable(con, holder)
    if not holder.usable:
        return False, None
    return True, scope_key(con)


def scope_key(con: Any) -> str | None:
    """The key of ``con``'s access scope: its scope variable's value as text (None: unset).

    Args:
        con: a DuckDB connection or cursor.

    Returns:
        The key held cursors and kept answers are found by.
    """
    scope = con.execute(f"select getvariable('{SCOPE_VARIABLE}')").fetchall()[0][0]
    return None if scope is None else repr(scope)


def interrupt(con: Any) -> None:
    """Interrupt what runs on ``con`` and on the cursors holding its routing query.

    A held question runs on a cursor of its own, which ``con.interrupt()`` does not reach: a
    caller that bounds a call's time by interrupting its connection (``dbrouter mcp``'s tools)
    calls this instead. It takes no lock, so a timer's thread never waits for the route it stops.

    Args:
        con: the caller's connection or cursor.
    """
    con.interrupt()
    try:
        holder = _HOLDERS.get(con)
        cursors = [scoped.con for scoped in list(holder.scopes.values())] if holder is not None else []
        out = _OUT.get(con)  # a pooled cursor the caller has out (pooled_statement)
        cursors += [out.con] if out is not None else []
    except (TypeError, RuntimeError):  # not weakly referenceable / the scopes changed under the copy
        cursors = []
    for cursor in cursors:
        with contextlib.suppress(Exception):  # closed by an eviction meanwhile: nothing runs there
            cursor.interrupt()


def _usable(con: Any, holder: _Holder) -> bool:
    """Whether ``con`` is worth holding: a DuckDB connection on a read-only KB in the main
    schema, whose UDF path is there and whose held tables are not above :data:`MAX_HELD_ROWS`
    together. Sets ``holder.columns`` to what would be held."""
    import duckdb

    try:
        read_only = con.execute("select readonly from duckdb_databases() "
                                "where database_name = current_database()").fetchall()
        con.execute("select 1 from main.kb_databases limit 0").fetchall()  # a dbt package's KB: another schema
        # one scan of duckdb_functions() (33-36 ms on a slow day whatever the filter: it lists every built-in)
        # answers both whether the entry points are there and what they name
        macros = file_macros(con)
    except duckdb.InterruptException:  # the caller's time is up: decide on a later call
        raise
    except Exception:  # noqa: BLE001 - an endpoint or any other connection: route as before
        return False
    if not (read_only and read_only[0][0] and all(entry in macros for entry in HELD)):
        return False
    holder.columns = _named_columns(con, macros)
    return _rows(con, list(holder.columns)) <= MAX_HELD_ROWS


@dataclass
class _Scoped:
    """A cursor holding one scope's tables, with the routing statement prepared per ``k`` asked."""

    con: Any
    key: str = field(default_factory=lambda: f"held-{next(_KEYS)}")  # its question in _QUESTIONS
    ks: set[str] = field(default_factory=set)  # the names of the statements prepared
    lock: threading.Lock = field(default_factory=threading.Lock)  # a question set, then answered

    def __post_init__(self) -> None:
        weakref.finalize(self, _QUESTIONS.pop, self.key, None)

    def prepared(self, entry: str, k: int | None) -> str:
        """The name of the statement answering ``entry`` (with ``k`` candidates), prepared on first use.

        The question comes from :data:`QUESTION_UDF`, an expression with no parameter and no
        column: a parameter the macro repeats makes DuckDB bind the statement again on every
        ``EXECUTE``, and a column of a one-row subquery makes the macro's query correlated with it.
        ``k`` as a parameter turns the macro's ``limit`` into a join on it (2x the operators' CPU),
        so it is a constant of its own statement.
        """
        name = f"dbrouter_{entry}" + ("" if k is None else f"_{k}" if k >= 0 else f"_m{-k}")  # an identifier
        if name not in self.ks:
            if len(self.ks) >= MAX_KS:  # a caller asking for ever new k: start over, bounded
                for old in self.ks:
                    self.con.execute(f"DEALLOCATE {old}")
                self.ks.clear()
            args = f"{QUESTION_UDF}('{self.key}')" + ("" if k is None else f", {k}")
            self.con.execute(f"PREPARE {name} AS select {entry}({args})")
            self.ks.add(name)
        return name


def _prepare(con: Any, holder: _Holder, allowed: Any, share: Any = None, parent: Any = None) -> _Scoped:
    """A cursor of ``parent`` (default ``con``) with the held tables registered and ``allowed``
    (the caller's ``kb_allowed_databases`` rows) as its ``kb_allowed_databases``; the copies are
    ``share``'s (made through ``con`` the first time) when given."""
    if holder.tables is None and share is not None:
        with _LOCK:  # once per parent: its cursors read the same file, read-only
            holder.tables = _COPIES.get(share)
            if holder.tables is None:
                holder.tables = _COPIES[share] = _copy(con, holder.columns)
    if holder.tables is None:
        holder.tables = _copy(con, holder.columns)
    register_once(con, QUESTION_UDF, _question, ["VARCHAR"], "VARCHAR")
    cursor = (con if parent is None else parent).cursor()
    try:
        for name, table in holder.tables.items():
            cursor.register(name, table)
        cursor.register("kb_allowed_databases", allowed)
    except Exception:
        cursor.close()
        raise
    return _Scoped(cursor)


def register_once(con: Any, name: str, function: Any, params: list[str], returns: str, **options: Any) -> None:
    """A Python UDF with side effects on ``con``'s database, unless it has one by that name: a Python
    UDF is the database's, not a cursor's, and every connection of a process to one file shares it.

    Args:
        con: a DuckDB connection or cursor.
        name: the function's SQL name.
        function: its body.
        params: its parameters' DuckDB type names.
        returns: its return type's name.
        **options: more ``create_function`` options (``null_handling``).
    """
    import duckdb

    try:
        con.create_function(name, function, [duckdb.sqltype(p) for p in params], duckdb.sqltype(returns),
                            side_effects=True, **options)
    except (duckdb.CatalogException, duckdb.NotImplementedException) as exc:  # registered before
        if "already" not in str(exc):
            raise


def _question(key: str) -> str | None:
    """The question set for the held cursor ``key`` (:data:`QUESTION_UDF`'s body)."""
    return _QUESTIONS.get(key)


def file_macros(con: Any) -> dict[str, str]:
    """The macros of the connection's own file (not its temp ones): name -> definition."""
    return dict(con.execute("select function_name, macro_definition from duckdb_functions() "
                            "where database_name = current_database() and macro_definition is not null").fetchall())


def _named_columns(con: Any, macros: dict[str, str]) -> dict[str, list[str]]:
    """The KB tables the held entry points name, with the columns they name.

    A name is what the text of the entry points' macros (followed through the macros they call)
    says outside string literals, so a table only named to a UDF (``dbrouter_document_hits('...')``)
    is not copied. A column the macros need and this misses cannot pass silently: ``PREPARE`` fails
    to bind, and the route is planned as before (:func:`held_route_json`).

    Args:
        con: the connection.
        macros: :func:`file_macros` of ``con``.

    Returns:
        Table name -> the column names the entry points name, in the table's order.
    """
    seen: set[str] = set()
    todo, words = list(HELD), set()
    while todo:
        name = todo.pop()
        if name in seen or name not in macros:
            continue
        seen.add(name)
        named = set(_WORD.findall(_STRING.sub("''", macros[name])))
        words |= named
        todo += [w for w in named if w in macros]
    views = {r[0] for r in con.execute("select view_name from duckdb_views() where database_name = current_database()"
                                       " and schema_name = 'main'").fetchall()}
    columns: dict[str, list[str]] = {}
    for table, column in con.execute("select table_name, column_name from duckdb_columns() "
                                     "where database_name = current_database() and schema_name = 'main' "
                                     "order by table_name, column_index").fetchall():
        if table in words and column in words and table not in views:
            columns.setdefault(table, []).append(column)
    return columns


def _rows(con: Any, tables: list[str]) -> int:
    """The rows of ``tables`` together (DuckDB's count kept with each table)."""
    if not tables:
        return 0
    marks = ", ".join("?" for _ in tables)
    return int(con.execute("select coalesce(sum(estimated_size), 0) from duckdb_tables() where database_name = "
                           f"current_database() and schema_name = 'main' and table_name in ({marks})",
                           tables).fetchall()[0][0])


def _copy(con: Any, columns: dict[str, list[str]]) -> dict[str, Any]:
    """Arrow copies of ``columns``' tables with those columns."""
    tables = {}
    for table, cols in columns.items():
        select = ", ".join('"' + c.replace('"', '""') + '"' for c in cols)
        tables[table] = con.sql(f'select {select} from main."{table}"').to_arrow_table()
    return tables
