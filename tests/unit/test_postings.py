"""python_udfs.postings: a lexical table's rows by term, against a filter of the rows written here."""

from __future__ import annotations

import math
import random

import pyarrow as pa
import pytest

from python_udfs.postings import BEST_TYPE, EXACT_UNIT, POSTING_TYPE, best_sums, build_postings, lookup


def _table(rows: list[tuple]) -> pa.Table:
    """(db_id, term, text, number) rows ordered by term, with the term's dense rank."""
    rows = sorted(rows, key=lambda r: r[1])
    ranks = {t: i for i, t in enumerate(sorted({r[1] for r in rows}), 1)}
    types = [pa.string(), pa.string(), pa.string(), pa.float64()]  # as the loader's query gives them
    columns = {f.name: pa.array([r[i] for r in rows], types[i]) for i, f in enumerate(POSTING_TYPE)}
    return pa.table({**columns, "term_no": pa.array([ranks[r[1]] for r in rows], pa.int64())})


def _rows(rng: random.Random, n: int) -> list[tuple]:
    words = [f"w{i}" for i in range(40)]
    return [(f"db{rng.randrange(30)}", rng.choice(words), rng.choice([None, "t1", "t2"]),
             rng.choice([None, rng.random() * 7, -0.0, 1e-300])) for _ in range(n)]


def _asked(rng: random.Random, words: int) -> list:
    """Up to 7 of the words w0 .. w<words - 1>, then two of them again and a NULL (repeats and a
    NULL add nothing)."""
    asked = rng.sample([f"w{i}" for i in range(words)], rng.randrange(0, 8))
    return asked + rng.sample(asked, min(2, len(asked))) + [None]


def _key(row: dict) -> tuple:
    return tuple("NULL" if v is None else repr(v) for v in row.values())


@pytest.mark.parametrize("seed", range(5))
def test_lookup_returns_exactly_the_rows_of_the_terms_asked(seed):
    rng = random.Random(seed)
    rows = _rows(rng, 500)
    held = build_postings(_table(rows))
    for _ in range(20):
        asked = _asked(rng, 50)  # w40.. are unknown
        got = lookup(held, asked)
        assert got.type == POSTING_TYPE
        want = [dict(zip([f.name for f in POSTING_TYPE], r, strict=True)) for r in rows if r[1] in asked]
        assert sorted(map(_key, got.to_pylist())) == sorted(map(_key, want))


def test_lookup_keeps_the_rows_of_the_databases_asked():
    """With ``dbs``: the rows of the terms asked whose database is one of those asked (unknown names,
    NULLs and repeats add nothing; an empty list keeps none); NULL texts read back as NULL."""
    rng = random.Random(7)
    rows = _rows(rng, 600)
    held = build_postings(_table(rows))
    for _ in range(30):
        asked = rng.sample([f"w{i}" for i in range(50)], rng.randrange(1, 8))
        dbs = rng.sample([f"db{i}" for i in range(35)], rng.randrange(0, 6)) + ["nope", None]  # db30.. unknown
        got = lookup(held, asked, dbs)
        assert got.type == POSTING_TYPE
        want = [dict(zip([f.name for f in POSTING_TYPE], r, strict=True)) for r in rows if r[1] in asked and r[0] in dbs]
        assert sorted(map(_key, got.to_pylist())) == sorted(map(_key, want))
    assert len(lookup(held, [r[1] for r in rows], [])) == 0
    assert len(lookup(held, ["w1"], None)) == len([r for r in rows if r[1] == "w1"])
    assert None in [r["text"] for r in lookup(held, [r[1] for r in rows]).to_pylist()]


def test_numbers_come_back_unrounded_and_nulls_stay_null():
    rows = [("a", "x", None, math.pi), ("b", "x", "t", None), ("c", "y", "u", 0.1 + 0.2)]
    got = lookup(build_postings(_table(rows)), ["x", "y"]).to_pylist()
    assert [(r["db_id"], r["text"], r["number"]) for r in got] == [("a", None, math.pi), ("b", "t", None),
                                                                    ("c", "u", 0.1 + 0.2)]


def test_nothing_asked_or_nothing_held_gives_no_rows():
    held = build_postings(_table([("a", "x", None, 1.0)]))
    assert len(lookup(held, [])) == 0 and len(lookup(held, ["zzz", None])) == 0
    empty = build_postings(_table([]))
    assert empty.ranges == {} and len(lookup(empty, ["x"])) == 0


def test_a_table_not_ordered_by_term_is_refused():
    table = _table([("a", "x", None, 1.0), ("b", "y", None, 2.0)])
    swapped = pa.table({"db_id": ["a", "b", "c"], "term": ["x", "y", "x"], "text": pa.nulls(3, pa.string()),
                        "number": pa.nulls(3, pa.float64()), "term_no": pa.array([1, 2, 1], pa.int64())})
    build_postings(table)
    with pytest.raises(ValueError, match="not ordered by term"):
        build_postings(swapped)


def test_a_null_term_is_refused():
    table = pa.table({"db_id": ["a"], "term": pa.array([None], pa.string()), "text": pa.nulls(1, pa.string()),
                      "number": pa.nulls(1, pa.float64()), "term_no": pa.array([1], pa.int64())})
    with pytest.raises(ValueError, match="NULL term"):
        build_postings(table)


def _weighted_rows(rng: random.Random, n: int) -> list[tuple]:
    """(db_id, term, table, weight) rows as kb_table_terms holds them: each (database, table, term)
    once, weights multiples of 2^-32 (many equal, so sums tie), table names that differ in case and
    in non-ASCII letters (VARCHAR order is by code point)."""
    tables = ["Singer", "singer", "song", "Stadium", "zoo", "Zoë", "zoe", "a"]
    weights = [round(rng.random() * 9 / EXACT_UNIT) * EXACT_UNIT for _ in range(6)] + [1.0, 0.5]
    seen, rows = set(), []
    for _ in range(n):
        row = (f"db{rng.randrange(12)}", f"w{rng.randrange(30)}", rng.choice(tables))
        if row not in seen:
            seen.add(row)
            rows.append((*row, rng.choice(weights)))
    return rows


def _best_by_hand(rows: list[tuple], asked: list) -> dict[str, tuple[str, float]]:
    """Each database's best table as SQL computes it: sum(weight) per table, then the largest sum,
    ties to the larger name (arg_max(table_name, (bm25, table_name)))."""
    sums: dict[tuple[str, str], float] = {}
    for db, term, table, weight in rows:
        if term in asked:
            sums[(db, table)] = sums.get((db, table), 0.0) + weight
    best: dict[str, tuple[str, float]] = {}
    for (db, table), total in sums.items():
        if db not in best or (total, table) > (best[db][1], best[db][0]):
            best[db] = (table, total)
    return best


@pytest.mark.parametrize("seed", range(5))
def test_best_sums_is_each_database_best_table_as_sql_sums_and_ranks_it(seed):
    rng = random.Random(seed)
    rows = _weighted_rows(rng, 700)
    held = build_postings(_table(rows))
    for _ in range(25):
        asked = _asked(rng, 35)  # w30.. are unknown
        got = best_sums(held, asked)
        assert got.type == BEST_TYPE
        assert {r["db_id"]: (r["text"], r["total"]) for r in got.to_pylist()} == _best_by_hand(rows, asked)
        assert len(got) == len({r["db_id"] for r in got.to_pylist()})


def test_best_sums_totals_do_not_depend_on_the_order_of_the_words():
    """The weights are multiples of 2^-32, so every order of adding gives the same double (the
    reason kb_table_terms rounds them): the same totals whatever order the words are asked in."""
    rows = [("a", f"w{i}", "t", round((0.1 + i / 7) / EXACT_UNIT) * EXACT_UNIT) for i in range(9)]
    held = build_postings(_table(rows))
    words = [f"w{i}" for i in range(9)]
    totals = {best_sums(held, random.Random(s).sample(words, 9)).to_pylist()[0]["total"] for s in range(30)}
    assert len(totals) == 1
    assert totals == {math.fsum(r[3] for r in rows)}  # the exact sum


def test_best_sums_refuses_numbers_whose_sums_depend_on_the_order():
    held = build_postings(_table([("a", "x", "t", 0.1), ("a", "y", "t", 0.2)]))  # not multiples of 2^-32
    with pytest.raises(ValueError, match="rebuild the KB"):
        best_sums(held, ["x", "y"])
    big = build_postings(_table([("a", "x", "t", 2.0 ** 20), ("a", "y", "t", 2.0 ** 20)]))  # the sum reaches 2^21
    best_sums(big, ["x"])
    with pytest.raises(ValueError, match="rebuild the KB"):
        best_sums(big, ["x", "y"])
    with pytest.raises(ValueError, match="NULL number"):
        best_sums(build_postings(_table([("a", "x", "t", None)])), ["x"])
    with pytest.raises(ValueError, match="NULL text"):
        best_sums(build_postings(_table([("a", "x", None, 1.0)])), ["x"])
    assert len(best_sums(build_postings(_table([])), ["x"])) == 0
