"""The agentic schema linker (AutoLink, Algorithm 1).

An LLM agent grows the linked schema of one database in a multi-turn dialogue. It starts from the
question, every table name and the top-``n`` retrieved columns (also the initial linked schema), and
each turn answers ``<think>...</think><actions>...</actions>`` with actions:

* ``@explore_schema(sql)`` / ``@verify_schema(sql)`` - one read-only SELECT on the database
  (observation: the R_SQL text of :func:`dbrouter.query.results.format_observation`);
* ``@retrieve_schema(text)`` - the top-``m`` columns for ``text`` among those not seen yet;
* ``@add_schema(t.c; t2.c2)`` - add columns to the linked schema (never alone in a turn);
* ``@stop()`` (or ``@stop_action()``) - end the dialogue.

The environment (retrieval, lookup, rendering, SQL) is an :class:`AgentEnvironment` of callables,
so the loop runs on fakes in tests; :func:`kb_environment` builds the real one over the KB.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from dbrouter.connection import Connection
from dbrouter.errors import AgentConfigError, DbrouterError
from dbrouter.execute.runners import execute
from dbrouter.linking import columns
from dbrouter.linking.columns import SchemaColumn
from dbrouter.linking.linker import LinkedSchema, link_schema
from dbrouter.linking.prompts import FORMAT_HELP, agent_prompt
from dbrouter.llm import Completion, LLMUnavailable
from dbrouter.query.results import format_observation

if TYPE_CHECKING:
    from dbrouter.sources.base import Target

FEEDBACK = ("explore_schema", "retrieve_schema", "verify_schema")
"""Actions whose observation the agent reads next turn."""
KNOWN = (*FEEDBACK, "add_schema", "stop")
ALIASES = {"stop_action": "stop"}
SQL_ACTIONS = ("explore_schema", "verify_schema")
MAX_ACTIONS_PER_TURN = 8
"""Actions run per turn; more are reported back as not run (a runaway answer must not run 50 queries)."""
MAX_OBSERVATION_CHARS = 3000
"""Characters of one action's observation (a wide row of long texts is cut, and the agent told)."""

_ACTION = re.compile(r"@\s*([A-Za-z_]\w*)")
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_ACTIONS_BLOCK = re.compile(r"<actions>(.*?)(?:</actions>|$)", re.S | re.I)
_FENCE = re.compile(r"^```[A-Za-z]*\s*\n?(.*?)\n?\s*```$", re.S)
_KEYWORD = re.compile(r"^(?:sql_query|sql|query|natural_language_query|text|schemas?|columns?)\s*=\s*", re.I)


class ChatModel(Protocol):
    """What the agent needs of an LLM: :meth:`dbrouter.llm.LLMClient.chat`."""

    def chat(self, messages: list[dict], temperature: float = 0.0, sample: int = 0,
             use_cache: bool = True) -> Completion: ...


@dataclass(frozen=True)
class Action:
    """One action of a turn: canonical ``name`` (``stop`` for ``stop_action``) and its argument."""

    name: str
    argument: str = ""


@dataclass
class ParsedTurn:
    """The actions read from one answer, and what could not be read (told to the agent)."""

    actions: list[Action] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class AgentEnvironment:
    """The environment of the agent, as callables over one database.

    ``retrieve(text, k, exclude)`` gives the top-``k`` columns not named in ``exclude``;
    ``lookup(names)`` resolves ``table.column`` names to (found, unknown); ``render(columns)`` is
    the M-Schema text; ``run_sql(sql)`` returns the R_SQL observation and may raise
    :class:`~dbrouter.errors.DbrouterError` (e.g. ``UnsafeSQL``), or is None when the database has no
    data source; ``link_without_llm(question)`` is the LLM-free linker used when the LLM fails.
    """

    tables: Callable[[], list[str]]
    retrieve: Callable[[str, int, Sequence[str]], list[SchemaColumn]]
    lookup: Callable[[list[str]], tuple[list[SchemaColumn], list[str]]]
    render: Callable[[list[SchemaColumn]], str]
    run_sql: Callable[[str], str] | None
    link_without_llm: Callable[[str], LinkedSchema]
    dialect: str | None = None
    sql_timeout: float = 10.0


# --------------------------------------------------------------------------------------------- parsing

def parse_turn(text: str) -> ParsedTurn:
    """Read the actions of one agent answer (tolerant in form).

    The ``<actions>`` block is read (all of them, in order; an unclosed one runs to the end); without
    one, the text outside ``<think>`` is. Arguments may be quoted or backticked, span lines, and
    SQL may hold parentheses and semicolons inside string literals.

    Args:
        text: the answer.

    Returns:
        :class:`ParsedTurn`; unknown actions and unreadable arguments are in ``problems``.
    """
    rest = _THINK.sub(" ", text or "")
    blocks = _ACTIONS_BLOCK.findall(rest)
    turn = ParsedTurn()
    if not blocks:
        blocks = [re.sub(r"</?actions>|</?think>", " ", rest, flags=re.I)]
    for block in blocks:
        _parse_block(block, turn)
    return turn


def _parse_block(block: str, turn: ParsedTurn) -> None:
    """Append the actions of one ``<actions>`` block to ``turn``."""
    pos = 0
    while (found := _ACTION.search(block, pos)) is not None:
        raw = found.group(1).lower()
        name = ALIASES.get(raw, raw)
        pos = found.end()
        while pos < len(block) and block[pos] in " \t":
            pos += 1
        argument = ""
        if pos < len(block) and block[pos] == "(":
            close = _closing_paren(block, pos, quotes=name in SQL_ACTIONS)
            if close is None and name in SQL_ACTIONS:
                close = _closing_paren(block, pos, quotes=False)
            if close is None:
                turn.problems.append(f"@{raw}( has no closing ')': close the argument with ')'")
                return
            argument, pos = _unwrap(block[pos + 1:close]), close + 1
        if name not in KNOWN:
            turn.problems.append(f"unknown action @{raw} (available: @explore_schema, @retrieve_schema, "
                                 "@verify_schema, @add_schema, @stop)")
        elif name != "stop" and not argument:
            turn.problems.append(f"@{raw} needs an argument in parentheses, e.g. @{raw}(...)")
        else:
            turn.actions.append(Action(name, argument))


def _closing_paren(text: str, start: int, quotes: bool) -> int | None:
    """Index of the ``)`` closing the ``(`` at ``start``; with ``quotes``, brackets inside '...',
    "...", `...` and ``--`` line comments do not count. None when it is never closed."""
    depth, quote, i = 0, None, start - 1
    while (i := i + 1) < len(text):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = None  # a doubled quote ('') closes and reopens: same result
        elif quotes and ch in "'\"`":
            quote = ch
        elif quotes and text.startswith("--", i):  # a line comment (its apostrophes are not quotes)
            i = text.find("\n", i)
            if i < 0:
                return None
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
    return None


def _unwrap(argument: str) -> str:
    """Strip whitespace, a code fence, a ``query=`` keyword and one pair of enclosing quotes."""
    arg = argument.strip()
    fenced = _FENCE.match(arg)
    if fenced:
        arg = fenced.group(1).strip()
    arg = _KEYWORD.sub("", arg, count=1)
    if len(arg) >= 2 and arg[0] == arg[-1] and arg[0] in "`'\"":
        arg = arg[1:-1].strip()
    return arg.rstrip(";").strip()


def split_column_names(argument: str, db: str) -> list[str]:
    """The ``table.column`` names of an ``@add_schema`` argument.

    Args:
        argument: names separated by semicolons, commas or new lines, each maybe quoted.
        db: the database id (a ``db.table.column`` or ``main.table.column`` name loses its prefix).

    Returns:
        Names in order, without duplicates (case-insensitive).
    """
    names: dict[str, str] = {}
    for part in re.split(r"[;,\n]", argument):
        name = re.sub(r"[`\"'\[\]]", "", part).strip()
        pieces = name.split(".")
        if len(pieces) > 2 and pieces[0].lower() in (db.lower(), "main"):
            name = ".".join(pieces[1:])
        if name:
            names.setdefault(name.lower(), name)
    return list(names.values())


# ------------------------------------------------------------------------------------------------ loop

@dataclass
class _State:
    """The linked schema, the columns seen (excluded from retrieval) and the cost so far."""

    linked: dict[str, SchemaColumn] = field(default_factory=dict)
    seen: dict[str, SchemaColumn] = field(default_factory=dict)
    added: dict[str, SchemaColumn] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    malformed: int = 0
    turn: int = 0

    def see(self, columns: Sequence[SchemaColumn]) -> None:
        for col in columns:
            self.seen.setdefault(col.name.lower(), col)

    def count(self, done: Completion) -> None:
        self.calls += 1
        self.cached += int(done.cached)
        self.prompt_tokens += done.prompt_tokens
        self.completion_tokens += done.completion_tokens


@dataclass
class _Turn:
    """What one turn produced: the observation message and whether the agent stopped."""

    observation: str
    stop: bool = False


def kb_environment(con: Connection, target: Target | None, db: str, sql_timeout: float = 10.0) -> AgentEnvironment:
    """The real environment: KB column retrieval and safe execution on ``target``.

    Args:
        con: connection from :func:`dbrouter.connect`.
        target: where SQL runs (:func:`dbrouter.execute.runners.target_for`), or None for a database
            ingested without data (the agent is told exploration is unavailable).
        db: the database id.
        sql_timeout: seconds per exploration/verification query.

    Returns:
        :class:`AgentEnvironment` over ``db``.
    """

    def run_sql(sql: str) -> str:
        assert target is not None, "run_sql is offered only when the database has a data source"
        return format_observation(execute(target, sql, timeout=sql_timeout))

    def retrieve(text: str, k: int, exclude: Sequence[str]) -> list[SchemaColumn]:
        return [s.column for s in columns.retrieve_columns(con, text, db, k=k, exclude=exclude)]

    return AgentEnvironment(tables=lambda: columns.table_names(con, db), retrieve=retrieve,
                            lookup=lambda names: columns.lookup_columns(con, db, names),
                            render=lambda cols: columns.render_schema(con, db, cols),
                            run_sql=run_sql if target is not None else None,
                            link_without_llm=lambda question: link_schema(con, question, db),
                            dialect=target.dialect if target is not None else None, sql_timeout=sql_timeout)


def link_schema_agent(con: Connection, llm: ChatModel | None, target: Target | None, question: str, db: str, n_initial: int = 30,
                      m: int = 3, max_turns: int = 10, sql_timeout: float = 10.0) -> LinkedSchema:
    """Link ``question`` to columns of ``db`` with the AutoLink agent.

    Args:
        con: connection from :func:`dbrouter.connect`.
        llm: the chat model (:class:`dbrouter.llm.LLMClient`), or None (no LLM configured: the
            LLM-free linker's result, with a note).
        target: where exploration SQL runs, or None (no data source: exploration unavailable).
        question: the user's question.
        db: the database id.
        n_initial: columns of the initial schema.
        m: columns per ``@retrieve_schema``.
        max_turns: the turn limit.
        sql_timeout: seconds per query.

    Returns:
        :class:`LinkedSchema` with ``method='agent'``; when the LLM fails, the LLM-free linker's
        columns plus those the agent added (a note says so).

    Raises:
        AgentConfigError: ``n_initial``, ``m`` or ``max_turns`` is out of range.
    """
    env = kb_environment(con, target, db, sql_timeout)
    return run_agent(env, llm, question, db, n_initial=n_initial, m=m, max_turns=max_turns)


def run_agent(env: AgentEnvironment, llm: ChatModel | None, question: str, db: str, n_initial: int = 30, m: int = 3,
              max_turns: int = 10) -> LinkedSchema:
    """Algorithm 1 on an injected environment (see :func:`link_schema_agent`).

    Args:
        env: the environment.
        llm: the chat model, or None (the LLM-free linker answers, with a note).
        question: the user's question.
        db: the database id.
        n_initial: columns of the initial schema.
        m: columns per ``@retrieve_schema``.
        max_turns: the turn limit.

    Returns:
        :class:`LinkedSchema` (``method='agent'``). Token counts are those of the answers (a cached
        answer counts its original call's usage; notes say how many were cached).

    Raises:
        AgentConfigError: ``n_initial``, ``m`` or ``max_turns`` is out of range.
    """
    _check_limits(n_initial, m, max_turns)
    state = _State()
    if llm is None:
        return _fallback(env, question, db, state, "no LLM is configured (DBROUTER_LLM_BASE_URL unset)")
    initial = env.retrieve(question, n_initial, [])
    state.see(initial)
    state.linked.update((c.name.lower(), c) for c in initial)
    system, user = agent_prompt(question, db, env.tables(), env.render(initial), len(initial), m, max_turns,
                                env.dialect, env.sql_timeout, sql_available=env.run_sql is not None)
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    for turn in range(1, max_turns + 1):
        state.turn = turn
        try:
            done = llm.chat(messages)
        except LLMUnavailable as exc:
            return _fallback(env, question, db, state, f"the LLM failed at turn {turn} ({exc})")
        state.count(done)
        messages.append({"role": "assistant", "content": done.text})
        played = _play_turn(env, state, parse_turn(done.text), db, m, turn, max_turns)
        if played.stop:
            return _result(db, state, f"stopped by @stop at turn {turn} of {max_turns}")
        messages.append({"role": "user", "content": played.observation})
    return _result(db, state, f"stopped: max turns ({max_turns}) reached without @stop")


def _check_limits(n_initial: int, m: int, max_turns: int) -> None:
    """Raise :class:`AgentConfigError` unless n_initial >= 0, m >= 1 and max_turns >= 1 (integers)."""
    for name, value, low in (("n_initial", n_initial, 0), ("m", m, 1), ("max_turns", max_turns, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise AgentConfigError(f"{name} must be an integer >= {low}, not {value!r}")


def _play_turn(env: AgentEnvironment, state: _State, parsed: ParsedTurn, db: str, m: int, turn: int,
               max_turns: int) -> _Turn:
    """Run the actions of one turn; returns the observation message (or the stop)."""
    header = f"Observation of turn {turn} ({max_turns - turn} turn(s) left)"
    problems = [f"- {p}" for p in parsed.problems]
    actions = parsed.actions
    names = {a.name for a in actions}
    if not actions:
        state.malformed += 1
        state.notes.append(f"turn {turn}: no action could be read")
        return _Turn("\n".join([f"{header}:", "[ERROR: no action could be read from your answer]", *problems,
                                FORMAT_HELP]))
    if not names & {*FEEDBACK, "stop"}:
        state.malformed += 1
        state.notes.append(f"turn {turn}: @add_schema alone rejected")
        return _Turn("\n".join([f"{header}:", "[ERROR: @add_schema cannot be the only action of a turn; the "
                                "columns were NOT added. Send them again together with @explore_schema, "
                                "@retrieve_schema, @verify_schema or @stop()]", *problems, FORMAT_HELP]))
    stop = "stop" in names
    parts = [f"{header}:", *problems]
    for i, action in enumerate(actions, 1):
        if action.name == "stop":
            continue
        label = f"[{i}] @{action.name}({_short(action.argument)})"
        if i > MAX_ACTIONS_PER_TURN:
            parts.append(f"{label}\n[NOT RUN: at most {MAX_ACTIONS_PER_TURN} actions run per turn]")
        elif stop and action.name != "add_schema":
            state.notes.append(f"turn {turn}: @{action.name} not run (the turn stopped)")
        else:
            parts.append(f"{label}\n{_cut(_run_action(env, state, action, db, m))}")
    return _Turn("\n".join(parts), stop=stop)


def _run_action(env: AgentEnvironment, state: _State, action: Action, db: str, m: int) -> str:
    """The observation of one action (state updated for retrieve and add)."""
    if action.name in SQL_ACTIONS:
        if env.run_sql is None:
            return (f"[ERROR: exploration is unavailable: database {db} has no data source to run SQL on (it was "
                    "ingested without data); use @retrieve_schema instead]")
        try:
            return env.run_sql(action.argument)
        except DbrouterError as exc:
            return f"[ERROR: {exc}]"
    if action.name == "retrieve_schema":
        found = env.retrieve(action.argument, m, [c.name for c in state.seen.values()])
        state.see(found)
        if not found:
            return f"[No more columns: every column of {db} has already been shown]"
        return env.render(found)
    return _add(env, state, split_column_names(action.argument, db), db)


def _add(env: AgentEnvironment, state: _State, names: list[str], db: str) -> str:
    """Add resolved columns to the linked schema; the observation names the new, known and unknown ones."""
    found, unknown = env.lookup(names) if names else ([], [])
    new = [c for c in found if c.name.lower() not in state.linked]
    for col in new:
        state.linked[col.name.lower()] = col
        state.added[col.name.lower()] = col
    state.see(found)
    lines = [f"added {len(new)} column(s): {', '.join(c.name for c in new) or '-'}"]
    if len(new) < len(found):
        lines.append("already linked: " + ", ".join(c.name for c in found if c not in new))
    if unknown:
        state.notes.append(f"turn {state.turn}: unknown column(s) not added: {', '.join(unknown)}")
        lines.append(f"[ERROR: unknown column(s), not added (no such table.column in {db}): {', '.join(unknown)}; "
                     "use table.column names from the table list and the schema shown]")
    lines.append(f"The linked schema has {len(state.linked)} column(s).")
    return "\n".join(lines)


def _short(text: str, limit: int = 200) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def _cut(observation: str) -> str:
    """One observation cut to :data:`MAX_OBSERVATION_CHARS`, saying so."""
    if len(observation) <= MAX_OBSERVATION_CHARS:
        return observation
    return observation[:MAX_OBSERVATION_CHARS] + f"\n... [observation cut at {MAX_OBSERVATION_CHARS} characters]"


def _result(db: str, state: _State, why: str) -> LinkedSchema:
    """The linked schema with the notes of the dialogue."""
    notes = [why, *_summary(state), *state.notes]
    return LinkedSchema(db, list(state.linked.values()), "agent", notes, state.calls, state.prompt_tokens,
                        state.completion_tokens)


def _summary(state: _State) -> list[str]:
    """Notes: turns, cache hits, malformed turns, columns added."""
    notes = [f"turns used: {state.calls} ({state.cached} answer(s) from the LLM cache, "
             f"{state.malformed} malformed)"]
    added = ", ".join(c.name for c in state.added.values()) or "none"
    notes.append(f"columns added by the agent: {len(state.added)} ({added})")
    return notes


def _fallback(env: AgentEnvironment, question: str, db: str, state: _State, reason: str) -> LinkedSchema:
    """The LLM-free linker's columns plus those the agent added, when the LLM failed or there is none."""
    base = env.link_without_llm(question)
    columns = {c.name.lower(): c for c in base.columns}
    for key, col in state.added.items():
        columns.setdefault(key, col)
    why = (f"fallback: {reason}; linked by the LLM-free linker "
           f"({len(base.columns)} column(s)) plus {len(state.added)} column(s) the agent had added")
    notes = [why, *_summary(state), *state.notes, *(f"LLM-free linker: {n}" for n in base.notes)]
    return LinkedSchema(db, list(columns.values()), "agent", notes, state.calls + base.llm_calls,
                        state.prompt_tokens + base.prompt_tokens, state.completion_tokens + base.completion_tokens)
