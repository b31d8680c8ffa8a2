"""python_udfs.join_paths: the breadth-first walk's rows, against walks written out here."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from python_udfs.join_paths import PATH_TYPE, build_graph, walk


def _graph(edges: list[tuple[str, str, str]]):
    edges = sorted(edges, key=lambda e: tuple(x or "" for x in e))
    return build_graph(pa.table({"db_id": [e[0] for e in edges], "from_table": [e[1] for e in edges],
                                 "to_table": [e[2] for e in edges]}))


def _both_ways(db: str, pairs: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    return [(db, a, b) for a, b in pairs] + [(db, b, a) for a, b in pairs]


def _rows(result: pa.StructArray) -> list[tuple]:
    return [(r["db_id"], r["from_table"], r["to_table"], r["hops"], r["join_path"]) for r in result.to_pylist()]


def test_each_table_once_at_its_shortest_hop_with_the_smallest_path():
    # a - b - d and a - c - d: d is two hops away both ways; |a|b|d| < |a|c|d|
    graph = _graph(_both_ways("x", [("a", "c"), ("a", "b"), ("b", "d"), ("c", "d"), ("d", "e")]))
    got = _rows(walk(graph, ["x"], ["a"], 6))
    assert got == [("x", "a", "a", 0, "|a|"), ("x", "a", "b", 1, "|a|b|"), ("x", "a", "c", 1, "|a|c|"),
                   ("x", "a", "d", 2, "|a|b|d|"), ("x", "a", "e", 3, "|a|b|d|e|")]
    assert walk(graph, ["x"], ["a"], 6).type == PATH_TYPE


def test_max_hops_bounds_the_walk_and_zero_gives_the_source_alone():
    graph = _graph(_both_ways("x", [("a", "b"), ("b", "c"), ("c", "d")]))
    assert [r[2] for r in _rows(walk(graph, ["x"], ["a"], 2))] == ["a", "b", "c"]
    assert _rows(walk(graph, ["x"], ["a"], 0)) == [("x", "a", "a", 0, "|a|")]


def test_a_source_without_edges_or_database_is_its_own_row():
    graph = _graph(_both_ways("x", [("a", "b")]))
    assert _rows(walk(graph, ["x", "y"], ["lonely", "t"], 6)) == [("x", "lonely", "lonely", 0, "|lonely|"),
                                                                   ("y", "t", "t", 0, "|t|")]


def test_repeated_and_null_sources_and_self_loops():
    graph = _graph(_both_ways("x", [("a", "b")]) + [("x", "a", "a"), ("x", None, "b")])
    got = _rows(walk(graph, ["x", None, "x", "x"], ["a", "a", None, "a"], 6))
    assert got == [("x", "a", "a", 0, "|a|"), ("x", "a", "b", 1, "|a|b|")]
    assert _rows(walk(graph, [], [], 6)) == []


def test_databases_are_walked_apart():
    graph = _graph(_both_ways("x", [("a", "b")]) + _both_ways("y", [("a", "c")]))
    assert [r[2] for r in _rows(walk(graph, ["y"], ["a"], 6))] == ["a", "c"]


def test_edges_not_ordered_by_database_are_refused():
    table = pa.table({"db_id": ["x", "y", "x"], "from_table": ["a", "a", "b"], "to_table": ["b", "c", "a"]})
    with pytest.raises(ValueError, match="ordered by db_id"):
        build_graph(table)


def _bfs_by_enumeration(edges: set[tuple[str, str]], source: str, max_hops: int) -> dict[str, tuple[int, str]]:
    """Every simple path up to max_hops (the portable walk's enumeration), then the shortest and,
    among those, the smallest string per table."""
    best: dict[str, tuple[int, str]] = {}
    stack = [(source, 0, f"|{source}|")]
    while stack:
        table, hops, path = stack.pop()
        if table not in best or (hops, path) < best[table]:
            best[table] = (hops, path)
        if hops < max_hops:
            for a, b in edges:
                if a == table and f"|{b}|" not in path:
                    stack.append((b, hops + 1, f"{path}{b}|"))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_random_graphs_match_an_enumeration_of_every_simple_path(seed):
    rng = random.Random(seed)
    tables = [f"t{i}" for i in range(9)] + ["T", "t_1", "é"]
    pairs = {(rng.choice(tables), rng.choice(tables)) for _ in range(rng.randrange(4, 16))}
    edges = {(a, b) for a, b in pairs if a != b} | {(b, a) for a, b in pairs if a != b}
    graph = _graph([("db", a, b) for a, b in edges])
    for source in tables:
        for max_hops in (1, 3, 6):
            got = {r[2]: (r[3], r[4]) for r in _rows(walk(graph, ["db"], [source], max_hops))}
            assert got == _bfs_by_enumeration(edges, source, max_hops), (seed, source, max_hops)
