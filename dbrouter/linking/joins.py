"""Shortest join paths through a database's join graph (declared and implied edges), used by the
linker to connect the tables it links and hand on the keys that join them."""

from __future__ import annotations

from collections import deque


def join_graph(edges: list[tuple[str, str, str, str, bool]]) -> dict[str, list[tuple[str, str, str]]]:
    """The join edges as an undirected adjacency list: table -> [(neighbour, own key, its key)].

    Args:
        edges: (from_table, from_column, to_table, to_column, is_declared), lower-case.

    Returns:
        The adjacency list :func:`join_path_keys` walks (build it once to walk it many times).
    """
    graph: dict[str, list[tuple[str, str, str]]] = {}
    for ft, fc, tt, tc, _declared in edges:
        if ft != tt:
            graph.setdefault(ft, []).append((tt, fc, tc))
            graph.setdefault(tt, []).append((ft, tc, fc))
    return graph


def join_path_keys(tables: list[str], edges: list[tuple[str, str, str, str, bool]],
                   graph: dict[str, list[tuple[str, str, str]]] | None = None) -> tuple[list[str], set[str]]:
    """Connect ``tables`` through the join graph, each to the tree so far by a shortest path.

    Args:
        tables: lower-case table names, most important first.
        edges: (from_table, from_column, to_table, to_column, is_declared), lower-case.
        graph: :func:`join_graph` of ``edges`` when the caller already built it.

    Returns:
        (every table on the tree, including bridge tables; the ``table.column`` keys of its edges).
    """
    if graph is None:
        graph = join_graph(edges)
    order = list(dict.fromkeys(tables))
    tree, keys = set(order[:1]), set()
    for start in order[1:]:
        if start in tree:
            continue
        prev: dict[str, tuple[str, str, str] | None] = {start: None}
        queue, found = deque([start]), None
        while queue:
            u = queue.popleft()
            if u in tree:
                found = u
                break
            for v, cu, cv in graph.get(u, []):
                if v not in prev:
                    prev[v] = (u, cu, cv)
                    queue.append(v)
        node = found
        while node is not None and (step := prev[node]) is not None:
            u, cu, cv = step
            keys.update((f"{u}.{cu}", f"{node}.{cv}"))
            tree.add(u)
            node = u
        tree.add(start)
    return sorted(tree), keys
