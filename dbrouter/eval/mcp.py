"""`dbrouter eval mcp`: round-trip latency of `dbrouter mcp`'s tools through the MCP SDK's client.

A ``dbrouter mcp`` process is started over stdio (what agents' MCP clients do); after the
handshake and one warm-up call, each of ``route``, ``link`` and ``run_sql`` is called ``requests``
times in turn with the KB's own example questions (``route``/``link``) and their SQL
(``run_sql``, on databases with a data source), and the wall time of every call is recorded.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from dbrouter.errors import DbrouterError
from dbrouter.eval.publish import Report

CALLS = ("route", "link", "run_sql")
"""The tools timed, in order."""


@dataclass
class McpLatency:
    """Per tool: calls, errors, p50 and p95 in milliseconds; and the server's start-up."""

    warehouse: str
    requests: int
    startup_ms: float
    tools: dict[str, dict[str, float]]


def _examples(warehouse: Path, n: int) -> list[tuple[str, str, str]]:
    import duckdb

    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        rows = con.execute("select e.question, e.db_id, e.sql_text from kb_examples as e join kb_databases as d "
                           "on d.db_id = e.db_id where d.source_type in ('sqlite', 'duckdb') "
                           "order by hash(e.question) limit ?", [n]).fetchall()
    finally:
        con.close()
    if not rows:
        raise DbrouterError(f"{warehouse} has no examples on a database with a data source: build the demo "
                            "(`make demo`) or a KB with examples")
    return rows


def run_mcp_latency(warehouse: Path, requests: int = 100) -> McpLatency:
    """Time ``dbrouter mcp``'s tools over stdio.

    Args:
        warehouse: a built KB with examples.
        requests: calls per tool.

    Returns:
        The latencies.
    """
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    examples = _examples(warehouse, requests)
    exe = str(Path(sys.executable).parent / "dbrouter")

    async def main() -> McpLatency:
        started = time.perf_counter()
        # the calls cycle the examples: with kept answers (adr-0038) a `route` asked again would not route
        params = StdioServerParameters(command=exe, args=["mcp", "--warehouse", str(warehouse)],
                                       env={**os.environ, "DBROUTER_KEPT_ANSWERS": "0"})
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            await s.call_tool("route", {"question": examples[0][0]})
            startup = (time.perf_counter() - started) * 1000
            out: dict[str, dict[str, float]] = {}
            for tool in CALLS:
                times, errors = [], 0
                for i in range(requests):
                    question, db, sql = examples[i % len(examples)]
                    args = {"route": {"question": question}, "link": {"question": question, "db": db},
                            "run_sql": {"db": db, "sql": sql}}[tool]
                    t0 = time.perf_counter()
                    result = await s.call_tool(tool, args)
                    times.append((time.perf_counter() - t0) * 1000)
                    errors += bool(result.is_error)
                times.sort()
                out[tool] = {"calls": requests, "errors": errors, "p50_ms": round(statistics.median(times), 1),
                             "p95_ms": round(times[int(0.95 * (len(times) - 1))], 1)}
            return McpLatency(str(warehouse), requests, round(startup, 1), out)

    return anyio.run(main)


def mcp_report(m: McpLatency, command: str) -> Report:
    """The latencies as a :class:`Report` (block ``eval mcp``).

    Args:
        m: :func:`run_mcp_latency`'s result.
        command: the command line to record.

    Returns:
        The report.
    """
    rows = "".join(f"| `{t}` | {v['calls']:.0f} | {v['errors']:.0f} | {v['p50_ms']} | {v['p95_ms']} |\n"
                   for t, v in m.tools.items())
    markdown = ("#### eval mcp: tool round trips over stdio (MCP SDK client)\n\n"
                f"Server start, handshake and first `route`: {m.startup_ms} ms.\n\n"
                "| tool | calls | errors | p50 ms | p95 ms |\n|---|---|---|---|---|\n" + rows + "\n"
                "The server keeps no answers (`DBROUTER_KEPT_ANSWERS=0`): the calls cycle the examples, and "
                "every `route` is routed (a question's vector, computed once, is reused when it comes round "
                "again). "
                "`run_sql` runs each example's own SQL on its source: an example written for SQLite that its "
                "DuckDB copy refuses counts as an error (a tool error, not a failed server).\n\n")
    return Report(key="eval mcp", command=command, data=asdict(m), markdown=markdown, text=json.dumps(asdict(m)))
