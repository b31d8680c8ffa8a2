"""What DuckDB's profiler says a statement read: the tests that check a query reads only the rows
it needs (a candidate's rows, one database's vectors) count its scans' rows."""

from __future__ import annotations

import json
from pathlib import Path


def table_scans(profile: Path, table: str) -> list[int]:
    """The rows each scan of `table` passed on in the statement a DuckDB JSON profile describes.

    Args:
        profile: the file `PRAGMA enable_profiling='json'` wrote.
        table: the table's name, without catalog or schema.

    Returns:
        One row count per scan of the table, in no particular order.
    """
    tree = json.loads(profile.read_text())["operator"]
    stack, rows = list(tree if isinstance(tree, list) else [tree]), []
    while stack:
        node = stack.pop()
        if node.get("type") == "TABLE_SCAN" and node.get("extra_info", {}).get("Table", "").endswith("." + table):
            rows.append(node["intermediate_rows"])
        stack.extend(node.get("children", []))
    return rows


def scanned_rows(con, sql: str, params: list, table: str, profile: Path) -> list[int]:
    """Run `sql` with DuckDB's profiler on and return :func:`table_scans` of `table`.

    Args:
        con: a DuckDB connection.
        sql: the statement (its rows are fetched and dropped).
        params: its parameters.
        table: the table whose scans are counted.
        profile: where the profile is written (read it again for other tables).

    Returns:
        One row count per scan of the table.
    """
    con.execute("PRAGMA enable_profiling='json'")
    con.execute(f"SET profiling_output='{profile}'")
    try:
        con.execute(sql, params).fetchall()
    finally:
        con.execute("PRAGMA disable_profiling")
    return table_scans(profile, table)
