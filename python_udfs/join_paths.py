"""The candidates' join paths from a join graph held in the UDF process (issue 36).

The re-rank shows, for each candidate database, the join path from its first chosen table to each
other chosen table: a breadth-first walk of ``kb_walk_edges`` from one table
(``duckdb__table_reachability``, a ``USING KEY`` recursive CTE). In SQL the walk first scanned
every edge of the KB for the candidates' (210,052 rows, 8 ms of a held question at 10,000
synthetic databases) and then ran a recursive CTE of a few dozen rows (3-4 ms). Held here, a
database's edges are a slice of arrays and the walk is a few dictionary steps.

:func:`walk` gives exactly the CTE's rows: each table reachable from the source within
``max_hops`` hops once, at its shortest hop count, with the smallest path string of that length
(paths written ``|a|b|c|``, compared as strings, as the CTE's ``row_number() over (... order by
join_path)`` does; Python compares code points, DuckDB UTF-8 bytes: the same order). The source
itself is a row of hop 0, whether or not its database has edges. ``tests/unit/test_join_paths.py``
and ``tests/functional/test_join_paths.py`` compare it with the CTE.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from python_udfs import arrow

PATH_TYPE = pa.struct([("db_id", pa.string()), ("from_table", pa.string()), ("to_table", pa.string()),
                       ("hops", pa.int32()), ("join_path", pa.string())])
"""One reachable pair: the walk's row (``join_path`` as the CTE writes it, ``|a|b|``)."""


@dataclass(frozen=True)
class JoinGraph:
    """A KB's join edges by database.

    Attributes:
        ranges: db_id -> (first edge, end edge) in ``sources`` / ``targets``.
        sources: each edge's from_table, a database's edges contiguous.
        targets: each edge's to_table.
    """

    ranges: dict[str, tuple[int, int]]
    sources: list[str]
    targets: list[str]


def build_graph(table: pa.Table) -> JoinGraph:
    """The graph of ``table``'s edges.

    Args:
        table: columns db_id, from_table, to_table, ordered by db_id (``kb_walk_edges``).

    Returns:
        The graph (an edge with a NULL end, or from a table to itself, is left out, as the walk does).

    Raises:
        ValueError: a database's edges not contiguous (the table not ordered by db_id).
    """
    dbs = table.column("db_id").to_pylist()
    froms = table.column("from_table").to_pylist()
    tos = table.column("to_table").to_pylist()
    keep = [i for i in range(len(dbs)) if dbs[i] is not None and froms[i] is not None and tos[i] is not None
            and froms[i] != tos[i]]
    dbs, froms, tos = [dbs[i] for i in keep], [froms[i] for i in keep], [tos[i] for i in keep]
    ranges: dict[str, tuple[int, int]] = {}
    start = 0
    for i in range(1, len(dbs) + 1):
        if i == len(dbs) or dbs[i] != dbs[start]:
            if dbs[start] in ranges:
                raise ValueError("join paths: the edges are not ordered by db_id")
            ranges[dbs[start]] = (start, i)
            start = i
    return JoinGraph(ranges, froms, tos)


def walk(graph: JoinGraph, db_ids: Sequence[str | None], from_tables: Sequence[str | None],
         max_hops: int) -> pa.StructArray:
    """Every table reachable from each (database, table) source within ``max_hops`` hops.

    Args:
        graph: the KB's edges.
        db_ids: each source's database (a NULL source is skipped; a repeated one walked once).
        from_tables: each source's table.
        max_hops: the longest path walked (0: the sources alone).

    Returns:
        Rows of :data:`PATH_TYPE`, source by source in the order given, each source's rows by hop
        count and then path.
    """
    out: list[tuple[str, str, str, int, str]] = []
    for db, source in dict.fromkeys(zip(db_ids, from_tables, strict=True)):
        if db is None or source is None:
            continue
        first, end = graph.ranges.get(db, (0, 0))
        neighbours: dict[str, list[str]] = {}
        for i in range(first, end):
            neighbours.setdefault(graph.sources[i], []).append(graph.targets[i])
        seen = {source: f"|{source}|"}
        out.append((db, source, source, 0, seen[source]))
        frontier = [source]
        for hop in range(1, max_hops + 1):
            found: dict[str, str] = {}
            for table in frontier:
                path = seen[table]
                for target in neighbours.get(table, ()):
                    if target in seen:
                        continue
                    candidate = f"{path}{target}|"
                    if target not in found or candidate < found[target]:
                        found[target] = candidate
            if not found:
                break
            for target, path in sorted(found.items(), key=lambda item: item[1]):
                seen[target] = path
                out.append((db, source, target, hop, path))
            frontier = list(found)
    columns = list(zip(*out, strict=True)) if out else [(), (), (), (), ()]
    return pa.StructArray.from_arrays(
        [arrow.strings(columns[0]), arrow.strings(columns[1]), arrow.strings(columns[2]),
         arrow.numeric(np.asarray(columns[3], np.int32), pa.int32()), arrow.strings(columns[4])],
        fields=list(PATH_TYPE))
