"""Where a routed question's time goes: DuckDB's profiler over the routing query, operator time
by the part of the query it belongs to (``dbrouter eval profile``).

The routing query is one ``WITH`` of about 60 CTEs (``macros/routing/steps/``); an operator's part
is the CTE whose definition holds it (``<main>``: the final select; a CTE DuckDB makes up when
it decorrelates a subquery counts to the part that holds the subquery); a CTE operator's own time
(materialising its rows) is the CTE's. Python UDFs run inside the operator
that calls them (``embed`` inside ``q``; ``dbrouter_document_hits`` inside the ``UNNEST`` of
``hits``), so a part's time includes its UDFs'. DuckDB times an operator on each thread that runs
it, so the parts' sum is CPU time and may exceed the wall time on two cores.

Two paths: ``held``, what ``dbrouter.route()``, a ``dbrouter.connect()`` connection's plain
``route_query`` and ``dbrouter serve`` run from a connection's second question on (the plan kept:
no planning, :mod:`dbrouter.kb.held`); ``sql``, the pure-SQL path a client without the UDFs runs,
planned per question.
"""

from __future__ import annotations

import json
import statistics
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dbrouter.eval.publish import Report

MAIN = "<main>"
"""The part of the operators outside every CTE: the final select."""

SHOWN = 16
"""Parts listed one by one in the report; the rest are summed in one row."""


@dataclass
class RouteProfile:
    """The profiled questions of one KB and path.

    Attributes:
        warehouse: the KB as the report names it.
        path: ``held`` or ``sql``.
        questions: profiled questions (after the warm-up).
        wall_ms: the profiled query's wall time, per question (DuckDB's ``total_time``).
        cpu_ms: the operators' time summed, per question.
        planning_ms: binding, optimising and the physical plan, per question.
        parts: per part, its operators' time per question (0 where a question had none).
        heaviest: per part, the type of its most expensive operator on the first question.
        operators: physical operators of the first profiled question's plan.
    """

    warehouse: str
    path: str
    questions: int
    wall_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)
    planning_ms: list[float] = field(default_factory=list)
    parts: dict[str, list[float]] = field(default_factory=dict)
    heaviest: dict[str, str] = field(default_factory=dict)
    operators: int = 0


def parts_of(profile: dict[str, Any]) -> tuple[dict[str, float], dict[str, str], int]:
    """A DuckDB JSON profile's operator time by part (:data:`MAIN` or a CTE's name).

    Args:
        profile: the profile (``PRAGMA enable_profiling='json'`` output, DuckDB 2.0's layout).

    Returns:
        (part -> seconds, part -> its most expensive operator's type, number of operators).
    """
    seconds: dict[str, float] = {}
    heaviest: dict[str, tuple[float, str]] = {}
    count = 0

    def add(part: str, node: dict[str, Any]) -> None:
        nonlocal count
        count += 1
        spent = float(node.get("timing") or 0.0)
        seconds[part] = seconds.get(part, 0.0) + spent
        if spent > heaviest.get(part, (-1.0, ""))[0]:
            heaviest[part] = (spent, str(node.get("type")))

    def walk(node: dict[str, Any], part: str) -> None:
        children = node.get("children") or []
        if node.get("type") != "CTE" or not children:
            add(part, node)
        else:
            name = str((node.get("extra_info") or {}).get("CTE Name") or "?")
            # one DuckDB made up (``__duckdb_delim_N``, a decorrelated subquery) stays its parent's
            own = part if name.startswith("__duckdb") else name
            add(own, node)  # materialising its rows
            walk(children[0], own)  # its definition
            children = children[1:]  # the rest reads it
        for child in children:
            walk(child, part)

    for root in profile.get("operator") or profile.get("children") or []:
        walk(root, MAIN)
    return seconds, {k: v[1] for k, v in heaviest.items()}, count


def planning_seconds(profile: dict[str, Any]) -> float:
    """Binding, optimising and physical planning of a DuckDB JSON profile, in seconds."""
    optimizer = profile.get("optimizer") or {}
    optimising = optimizer.get("total_time")  # DuckDB 2.0 gives the total beside each optimiser's time
    if not isinstance(optimising, (int, float)):
        optimising = sum(float(v) for v in optimizer.values() if isinstance(v, (int, float)))
    return (float((profile.get("planner") or {}).get("total_time") or 0.0) + float(optimising)
            + float((profile.get("physical_planner") or {}).get("total_time") or 0.0))


def profile_route(con: Any, label: str, questions: list[str], path: str, k: int = 3, warm: int = 3) -> RouteProfile:
    """Profile the routing of each question on ``con``.

    Args:
        con: a read-only ``dbrouter.connect()`` connection (a writable one is never held).
        label: how the report names the KB.
        questions: ``warm`` questions to warm up on, then the ones profiled (each asked once:
            a question asked again is answered from kept answers, and its vector is cached).
        path: ``held`` (the held ``route_query_json_udf``) or ``sql`` (``route_query_json_sql``,
            planned).
        k: candidates per answer.
        warm: questions routed first, unprofiled.

    Returns:
        The profile.

    Raises:
        ValueError: an unknown path, too few questions, or a connection that does not hold the
            routing query (``held``).
    """
    from dbrouter.kb.held import ENTRY, held_route_json, held_statement

    if path not in ("held", "sql"):
        raise ValueError(f"eval profile: path must be 'held' or 'sql', not {path!r}")
    if len(questions) <= warm:
        raise ValueError(f"eval profile: needs more than {warm} distinct questions (the first {warm} warm up, "
                         f"unprofiled); given {len(questions)}")
    for question in questions[:warm]:
        if path == "held":
            held_route_json(con, question, k)
        else:
            con.execute("select route_query_json_sql(?, ?)", [question, k]).fetchall()
    result = RouteProfile(warehouse=label, path=path, questions=len(questions) - warm)
    with tempfile.TemporaryDirectory(prefix="dbrouter-profile-") as tmp:
        out = Path(tmp) / "profile.json"
        for i, question in enumerate(questions[warm:]):
            if path == "held":
                held = held_statement(con, ENTRY, question, k)
                if held is None:
                    raise ValueError("eval profile: this connection does not hold the routing query (a writable "
                                     "connection, a KB above the held bound, or no UDF path): profile --path sql")
                cur, sql, params = held[0], held[1], None
            else:
                cur, sql, params = con, "select route_query_json_sql(?, ?)", [question, k]
            cur.execute("pragma enable_profiling='json'")
            cur.execute(f"pragma profiling_output='{out}'")
            cur.execute("pragma profiling_mode='detailed'")
            try:
                cur.execute(sql, params).fetchall()
            finally:
                cur.execute("pragma disable_profiling")
            profile = json.loads(out.read_text())
            seconds, heaviest, count = parts_of(profile)
            for part in set(result.parts) | set(seconds):
                result.parts.setdefault(part, [0.0] * i).append(seconds.get(part, 0.0) * 1000)
            if i == 0:
                result.heaviest, result.operators = heaviest, count
            query = profile.get("query") or {}
            result.wall_ms.append(float(query.get("total_time") or 0.0) * 1000)
            result.cpu_ms.append(sum(seconds.values()) * 1000)
            result.planning_ms.append(planning_seconds(profile) * 1000)
    return result


def profile_report(result: RouteProfile, command: str) -> Report:
    """The BENCHMARKS.md block of a profile: the parts by median time, then the totals."""
    med = {part: statistics.median(ms) for part, ms in result.parts.items()}
    ranked = sorted(med, key=lambda part: -med[part])
    cpu = statistics.median(result.cpu_ms)
    rows = [f"| `{part}` | {med[part]:.2f} | {med[part] / cpu:.0%} | {result.heaviest.get(part, '-')} |"
            for part in ranked[:SHOWN]]
    rest = ranked[SHOWN:]
    if rest:
        rest_ms = sum(med[part] for part in rest)
        rows.append(f"| the other {len(rest)} parts | {rest_ms:.2f} | {rest_ms / cpu:.0%} | - |")
    what = ("held (`dbrouter.route()`: the plan kept)" if result.path == "held"
            else "pure SQL (`route_query_json_sql`, planned per question)")
    md = (f"#### eval profile: {result.warehouse}, {result.path}\n\n"
          f"Where a question's time goes, {what}: DuckDB's profiler over {result.questions} questions, each "
          f"asked once; operator time by the part of the routing query (the CTE) it belongs to, a part's "
          f"Python UDFs included; medians per part (so the rows need not add up to the total). "
          f"{result.operators} operators.\n\n"
          "| part | ms | share of operator time | its heaviest operator |\n|---|---|---|---|\n"
          + "\n".join(rows) + "\n"
          f"| **operators, all parts** | **{cpu:.1f}** | | |\n"
          f"| planning (bind, optimise, physical plan) | {statistics.median(result.planning_ms):.1f} | | |\n"
          f"| wall time of the profiled query | {statistics.median(result.wall_ms):.1f} | | |\n\n")
    data = asdict(result) | {"median_ms": med}
    return Report(key=f"eval profile {result.warehouse} {result.path}", command=command, data=data, markdown=md)
