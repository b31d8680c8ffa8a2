"""The plain ``route_query`` and ``route_query_json`` of a read-only :func:`dbrouter.connect`
connection, answered through the held routing query (:mod:`dbrouter.kb.held`).

A notebook, a script or dbt's Python step that writes ``select route_query('...')`` on the connection
``dbrouter.connect()`` gave it would otherwise have DuckDB bind and optimise the whole routing query
again for every question: about 60 % of a warm question's time on spider-route. On such a
connection the two plain names are temp macros over one Python UDF, :data:`SQL_UDF`, which answers
each row on a cursor of the connection's own (:class:`_Hold`) through :func:`dbrouter.kb.held.held_answer`:

- the first question is planned on that cursor, as ``route_query_json_udf(?, k := ?)`` /
  ``route_query_udf(?)``: a one-question process pays no copies;
- from the second on, the statement prepared once over the held copies answers it, the same rows
  by the same plan (``tests/functional/test_held_sql.py`` compares them with the planned names),
  and a question asked again under the same scope and ``k`` gets the answer kept
  (:mod:`dbrouter.kb.answers`).

The caller's access scope (the session variable :data:`dbrouter.connection.SCOPE_VARIABLE`) is
read by the macro, where the caller's statement runs, and set on the cursor before each answer;
a connection is its owner's, who can read the whole file, so the scope there is a filter and not a
boundary. ``dbrouter serve`` and ``dbrouter mcp``, where it is one, never get these macros: they
open their connections without the plain names.

What stays planned: a writable connection (the tables can change under the copies), the pure-SQL
path, a path's own names (``route_query_udf``), the other entry points, a knowledge base whose
plain-name macros are not the ones this module rewrites (:data:`REWRITES`), and one built by dbrouter
as a dbt package (its tables in another schema, which :mod:`dbrouter.kb.held` does not hold).
"""

from __future__ import annotations

import itertools
import json
import math
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

from dbrouter.connection import SCOPE_VARIABLE
from dbrouter.errors import WarehouseError
from dbrouter.kb.answers import MISSING
from dbrouter.kb.held import HELD, held_answer, register_once

SQL_UDF = "dbrouter_held_sql"
"""``dbrouter_held_sql(key, entry, question, k, scope)``: ``entry(question[, k])`` answered for the
connection ``key`` names, under ``scope`` (the caller's scope variable as JSON)."""

_SCOPE = f"to_json(getvariable('{SCOPE_VARIABLE}'))::varchar"

REWRITES = {
    "(route_query_udf(question))": ("route_query_udf", "null"),
    "(route_query_json_udf(question, k := k))": ("route_query_json_udf", "k"),
}
"""The bodies of the knowledge base's plain-name macros (``dbrouter_route_path_ddl('udf')``) this
module answers, each with the entry point it answers for and the ``k`` its call of :data:`SQL_UDF`
passes."""

_STATES: dict[str, _Hold] = {}
_KEYS = itertools.count()
_LOCK = threading.Lock()


@dataclass
class _Hold:
    """A connection's cursor that answers its plain routing names, one row at a time."""

    base: Any
    owner: weakref.ref  # the connection: its dbrouter.route() and these names share one set of copies
    scope: str | None = None  # the scope last set on ``base`` (JSON text; None: no scope)
    lock: threading.Lock = field(default_factory=threading.Lock)


def held_ddl(con: Any, ddl: str) -> str:
    """``ddl`` (the UDF path's plain names) with ``route_query`` and ``route_query_json`` answered
    through the held routing query, and :data:`SQL_UDF` registered for them.

    Args:
        con: a read-only DuckDB connection to the warehouse with the UDFs registered (the caller
            checks it is read-only, on the UDF path and its KB in the main schema: held.py holds
            no other, so a dbt package's KB keeps its planned macros).
        ddl: the ``create or replace temp macro`` statements of ``dbrouter_route_path_ddl('udf')``.

    Returns:
        The statements to run on ``con``: ``ddl`` unchanged when it does not hold both bodies of
        :data:`REWRITES` (a knowledge base built by another dbrouter): planned as before.
    """
    if not all(body in ddl for body in REWRITES):
        return ddl
    key = f"sql-{next(_KEYS)}"
    with _LOCK:
        # k a DOUBLE: the macro compares ranks with it as given (2.6 keeps two rows), never rounded
        register_once(con, SQL_UDF, _answer, ["VARCHAR", "VARCHAR", "VARCHAR", "DOUBLE", "VARCHAR"], "VARCHAR",
                      null_handling="special")
        _STATES[key] = _Hold(con.cursor(), weakref.ref(con))
    weakref.finalize(con, _STATES.pop, key, None)  # the cursor closes with the connection
    for body, (entry, k) in REWRITES.items():
        ddl = ddl.replace(body, f"({SQL_UDF}('{key}', '{entry}', question, {k}, {_SCOPE}))")
    return ddl


def _answer(key: str | None, entry: str | None, question: str | None, k: float | None,
            scope: str | None) -> str | None:
    """:data:`SQL_UDF`'s body: one row's answer (see the module's docstring).

    Args:
        key: the connection's key (:func:`held_ddl`).
        entry: ``route_query_udf`` or ``route_query_json_udf``.
        question: the question, as the caller's statement gave it.
        k: the number of candidates (``route_query_json_udf``; NULL, NaN, infinite or beyond 2**31:
            planned), None
            for ``route_query_udf``.
        scope: the caller's scope variable as JSON, None when it is not set.

    Returns:
        What ``entry(question[, k])`` returns on the caller's connection.

    Raises:
        WarehouseError: the key or entry is not one this module made, or the scope variable is not
            a list of database names.
    """
    hold = _STATES.get(key or "")
    if hold is None or entry not in HELD:
        raise WarehouseError(f"{SQL_UDF} is called by the plain route_query and route_query_json of a "
                             "dbrouter.connect() connection; call those instead")
    takes_k = HELD[entry]
    with hold.lock:  # one answer at a time on the cursor: its scope and question are this row's
        _set_scope(hold, scope)
        held_k = None
        if takes_k and k is not None and math.isfinite(k) and abs(k) < 2**31:  # else planned
            held_k = math.floor(k)  # a held statement's k is a whole number: rank <= 2.6 keeps rank <= 2's
        answer = held_answer(hold.base, entry, question, held_k, hold.owner())  # MISSING: not held
        if answer is not MISSING:
            return answer
        if takes_k:
            return hold.base.execute(f"select {entry}(?, k := ?)", [question, k]).fetchall()[0][0]
        return hold.base.execute(f"select {entry}(?)", [question]).fetchall()[0][0]


def _set_scope(hold: _Hold, scope: str | None) -> None:
    """Give ``hold``'s cursor the caller's scope (JSON text of its value; None: unset)."""
    if scope == hold.scope:
        return
    if scope is None:
        hold.base.execute(f"reset variable {SCOPE_VARIABLE}")
    else:
        value = json.loads(scope)
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise WarehouseError(f"the session variable {SCOPE_VARIABLE} must be a list of database names "
                                 f"(set variable {SCOPE_VARIABLE} = ['db1', 'db2']), not {scope[:200]}")
        hold.base.execute(f"set variable {SCOPE_VARIABLE} = cast(? as varchar[])", [value])
    hold.scope = scope
