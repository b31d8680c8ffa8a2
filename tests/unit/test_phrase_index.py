"""python_udfs.phrase_index against DuckDB itself: the same column phrases and spans in tables, the
span mapping's join (column_phrase_hits' SQL: exact by name, exact by value, cosine at or above the
threshold) and the pairs the index returns must be the same, with the same cosines."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from python_udfs.phrase_index import build_index, span_hits

DIM = 8
THRESHOLD = 0.3
WORDS = ["order", "total", "customer", "name", "city", "paris", "date", "id"]


def phrases(seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(6):
        for c in range(int(rng.integers(3, 12))):
            label = sorted({str(w) for w in rng.choice(WORDS, size=int(rng.integers(1, 4)))})
            rows.append({"db_id": f"db{d}", "table_name": f"t{c % 3}", "column_name": f"c{c}",
                         "component": f"p{c % 2}", "declared_component": f"q{c % 3}", "label_tokens": label,
                         "column_tokens": label[-1:], "represents_table": bool(c % 5 == 0),
                         "value_tokens": [str(w) for w in rng.choice(WORDS, size=int(rng.integers(0, 3)))]})
    vectors = rng.normal(size=(len(rows), DIM)).astype(np.float32)
    vectors[3] = 0  # a phrase the model knows no token of: cosine NaN, exact matches only
    table = pa.Table.from_pylist(rows)
    return table.append_column("embedding", pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM))


SPANS = [["order", "total"], ["customer"], ["paris"], ["city", "name"], ["unknown"], ["id"]]


def span_vectors(seed: int = 1) -> list[np.ndarray]:
    out = list(np.random.default_rng(seed).normal(size=(len(SPANS), DIM)).astype(np.float32))
    out[4] = np.zeros(DIM, np.float32)  # a span of no known token: no cosine
    return out


def _tables():
    """The phrases and spans as DuckDB tables ``phrases`` and ``spans_arrow``: (phrases, span vectors, con)."""
    table = phrases()
    vectors = span_vectors()
    con = duckdb.connect()
    con.register("phrases_arrow", table)
    con.execute("create table phrases as select * exclude (embedding), "
                f"cast(embedding as float[{DIM}]) as embedding from phrases_arrow")
    con.register("spans_arrow", pa.table({"span_no": list(range(1, len(SPANS) + 1)), "toks": SPANS,
                                         "v": [v.tolist() for v in vectors]}))
    return table, vectors, con


def test_the_index_returns_exactly_the_pairs_of_the_join():
    table, vectors, con = _tables()
    dbs = ["db0", "db3", "db4", "nope"]
    sql = con.execute(f"""
        select c.db_id, c.table_name, c.column_name, c.component, c.declared_component, cast(sp.span_no as integer),
            list_has_all(c.label_tokens, sp.toks) and (list_has_any(c.column_tokens, sp.toks) or c.represents_table),
            list_has_all(c.value_tokens, sp.toks),
            array_cosine_similarity(c.embedding, cast(sp.v as float[{DIM}])) as cos
        from phrases as c cross join spans_arrow as sp
        where c.db_id in ('db0', 'db3', 'db4', 'nope')""").fetchall()
    kept = {r[:8]: r[8] for r in sql
            if r[6] or r[7] or (r[8] is not None and not np.isnan(r[8]) and r[8] >= THRESHOLD)}
    assert any(r[6] for r in kept) and any(r[7] for r in kept) and any(not (r[6] or r[7]) for r in kept)
    hits = span_hits(build_index(table), dbs, SPANS, vectors, THRESHOLD).to_pylist()
    got = {tuple(h.values())[:8]: h["cos"] for h in hits}
    assert len(hits) == len(got)  # each pair once
    assert set(got) == set(kept)
    for key, cos in kept.items():
        if cos is None or np.isnan(cos):
            assert np.isnan(got[key])
        else:
            assert got[key] == pytest.approx(cos, abs=1e-6)


def test_no_candidates_or_no_spans_give_no_pairs_and_bad_vectors_are_refused():
    index = build_index(phrases())
    assert len(span_hits(index, ["nope"], SPANS, span_vectors(), THRESHOLD)) == 0
    assert len(span_hits(index, ["db1"], [], [], THRESHOLD)) == 0
    with pytest.raises(ValueError, match="span vector has 3 values"):
        span_hits(index, ["db1"], [["order"]], [np.zeros(3, np.float32)], THRESHOLD)
    with pytest.raises(ValueError, match="1 spans' tokens but 2 vectors"):
        span_hits(index, ["db1"], [["order"]], span_vectors()[:2], THRESHOLD)



def test_the_mappings_are_the_steps_own_grouping_of_the_pairs():
    """span_mappings against route_map_by_embedding_step's SQL over the same pairs: each pair once per
    word of its span, similarity 1 for an exact or value match, kept at the threshold, per column and
    word the highest similarity and its span, ties to the larger span text (two spans of one vector
    tie on every column), exact if any pair was."""
    from python_udfs.phrase_index import span_mappings

    table, vectors, con = _tables()
    toks = [*SPANS, ["total"], ["customer"]]
    vecs = [*vectors, vectors[0], vectors[1]]  # "total" ties "order total" on every cosine
    texts = [" ".join(t) for t in toks]
    words = [[0, 1], [2], [3], [4, 5], [6], [7], [1], [8]]
    con.register("spans_words", pa.table({"span": texts, "toks": toks, "words": words,
                                          "v": [v.tolist() for v in vecs]}))
    want = con.execute(f"""
        with pairs as (
            select c.db_id, c.table_name, c.column_name, c.component, c.declared_component, sp.span, sp.words,
                list_has_all(c.label_tokens, sp.toks)
                    and (list_has_any(c.column_tokens, sp.toks) or c.represents_table) as is_exact,
                list_has_all(c.value_tokens, sp.toks) as is_value,
                array_cosine_similarity(c.embedding, cast(sp.v as float[{DIM}])) as cos
            from phrases as c cross join spans_words as sp where c.db_id in ('db0', 'db3', 'db4')),
        per_word as (
            select p.*, cast(w.value as integer) as word_index,
                case when is_exact or is_value then 1.0 when isnan(cos) then null else cos end as similarity
            from pairs as p, (select unnest(p.words) as value) as w)
        select db_id, word_index, table_name, column_name, component, declared_component, max(similarity),
            arg_max(span, (similarity, span)), bool_or(is_exact),
            case when bool_or(is_exact) then 'name' when bool_or(is_value) then 'value' else 'similar' end
        from per_word where similarity >= {THRESHOLD}
        group by db_id, word_index, table_name, column_name, component, declared_component""").fetchall()
    got = span_mappings(build_index(table), ["db0", "db3", "db4", "nope"], toks, vecs, THRESHOLD, None,
                        texts, words).to_pylist()
    assert {r["match_kind"] for r in got} == {"name", "value", "similar"}
    assert any(r["span"] == "total" and r["word_index"] == 1 and r["match_kind"] == "similar" for r in got)
    assert sorted((*r[:6], *r[7:]) for r in want) == sorted(tuple(m[k] for k in m if k != "similarity") for m in got)
    sims = {r[:6]: r[6] for r in want}
    for m in got:
        assert m["similarity"] == pytest.approx(sims[tuple(m.values())[:6]], abs=1e-6)
    assert len(span_mappings(build_index(table), ["nope"], toks, vecs, THRESHOLD, None, texts, words)) == 0
    with pytest.raises(ValueError, match="8 spans' tokens but 7 texts"):
        span_mappings(build_index(table), ["db0"], toks, vecs, THRESHOLD, None, texts[:7], words)
    # a word mapped exactly by name by one span and by value by a larger one: named all the same
    one = pa.table({"db_id": ["d"], "table_name": ["t"], "column_name": ["city"], "component": ["p"],
                    "declared_component": ["q"], "label_tokens": [["city"]], "column_tokens": [["city"]],
                    "represents_table": [False], "value_tokens": [["paris"]],
                    "embedding": pa.FixedSizeListArray.from_arrays(pa.array(np.ones(DIM, np.float32)), DIM)})
    zero = np.zeros(DIM, np.float32)
    [m] = span_mappings(build_index(one), ["d"], [["city"], ["paris"]], [zero, zero], THRESHOLD, None,
                        ["city", "paris"], [[0], [0]]).to_pylist()
    assert (m["span"], m["is_exact"], m["match_kind"], m["similarity"]) == ("paris", True, "name", 1.0)


@pytest.mark.parametrize("per_span", [1, 2])
def test_a_span_keeps_only_each_databases_most_similar_columns_as_the_sql_does(per_span):
    """dbrouter__phrase_columns_per_span: of the pairs matching neither by name nor by value, a
    database keeps per span its `per_span` most similar columns and the most similar of each
    connected and declared part (cosine descending, then table.column descending) - in the index
    and in column_phrase_hits' windows alike."""
    table, vectors, con = _tables()
    rows = con.execute(f"""
        select db_id, table_name, column_name, span_no, is_exact, is_value from (
            select *,
                row_number() over (partition by db_id, span_no, case when is_exact or is_value then 1 else 0 end
                    order by case when isnan(cos) then null else cos end desc nulls last, table_name || '.' || column_name desc) as rn,
                row_number() over (partition by db_id, span_no, case when is_exact or is_value then 1 else 0 end, component
                    order by case when isnan(cos) then null else cos end desc nulls last, table_name || '.' || column_name desc) as part_rn,
                row_number() over (partition by db_id, span_no, case when is_exact or is_value then 1 else 0 end, declared_component
                    order by case when isnan(cos) then null else cos end desc nulls last, table_name || '.' || column_name desc) as declared_rn
            from (select c.db_id, c.table_name, c.column_name, c.component, c.declared_component,
                      cast(sp.span_no as integer) as span_no,
                      list_has_all(c.label_tokens, sp.toks)
                          and (list_has_any(c.column_tokens, sp.toks) or c.represents_table) as is_exact,
                      list_has_all(c.value_tokens, sp.toks) as is_value,
                      array_cosine_similarity(c.embedding, cast(sp.v as float[{DIM}])) as cos
                  from phrases as c cross join spans_arrow as sp where c.db_id in ('db0', 'db3', 'db4')))
        where is_exact or is_value
            or ((rn <= {per_span} or part_rn = 1 or declared_rn = 1) and not isnan(cos) and cos >= {THRESHOLD})""").fetchall()
    want = {r[:4] for r in rows}
    got = {(h["db_id"], h["table_name"], h["column_name"], h["span_no"])
           for h in span_hits(build_index(table), ["db0", "db3", "db4"], SPANS, vectors, THRESHOLD,
                              per_span).to_pylist()}
    assert got == want
    uncapped = span_hits(build_index(table), ["db0", "db3", "db4"], SPANS, vectors, THRESHOLD).to_pylist()
    assert len(got) < len(uncapped)  # the cap bound something
    # every connected part a span reached uncapped is still reached: connectivity is unchanged
    part = {(r["db_id"], r["table_name"], r["column_name"]): r["component"] for r in table.to_pylist()}
    assert {(d, s, part[(d, t, c)]) for d, t, c, s in got} \
        == {(h["db_id"], h["span_no"], h["component"]) for h in uncapped}


def _top_similar_reference(table: pa.Table, rows: np.ndarray, cos: np.ndarray, n: int) -> set[int]:
    """The rule spelled out row by row: n best by (cosine desc, table.column desc), plus the best of
    every connected and every declared part (None is a part too)."""
    recs = table.to_pylist()
    order = sorted(range(len(rows)), key=lambda i: (-float(cos[i]), _desc(f"{recs[rows[i]]['table_name']}."
                                                                          f"{recs[rows[i]]['column_name']}")))
    keep = set(order[:n])
    for key in ("component", "declared_component"):
        seen: set = set()
        for i in order:
            if recs[rows[i]][key] not in seen:
                seen.add(recs[rows[i]][key])
                keep.add(i)
    return {int(rows[i]) for i in keep}


class _desc(str):
    def __lt__(self, other):  # descending string order inside an ascending sort
        return str.__gt__(self, other)


def _parts_table(rng: np.random.Generator, n_rows: int, per_db: int, n_parts: int) -> pa.Table:
    """Random column phrases, ``per_db`` to a database, in random connected and declared parts
    (some in none)."""
    table = pa.Table.from_pylist([{
        "db_id": f"db{i // per_db}", "table_name": f"t{int(rng.integers(0, 4))}", "column_name": f"c{i}",
        "component": None if i % 7 == 0 else f"p{int(rng.integers(0, n_parts))}",
        "declared_component": None if i % 5 == 0 else f"q{int(rng.integers(0, 3))}",
        "label_tokens": ["x"], "column_tokens": ["x"], "represents_table": False, "value_tokens": []}
        for i in range(n_rows)])
    return table.append_column("embedding", pa.FixedSizeListArray.from_arrays(
        pa.array(rng.normal(size=n_rows * DIM).astype(np.float32)), DIM))


@pytest.mark.parametrize("seed", range(5))
def test_top_similar_matches_the_rule_with_ties_and_missing_parts(seed):
    from python_udfs.phrase_index import _top_similar

    rng = np.random.default_rng(seed)
    n_rows = 60
    table = _parts_table(rng, n_rows, n_rows, 5)
    index = build_index(table)
    rows = np.sort(rng.choice(n_rows, size=40, replace=False))
    cos = rng.choice(np.array([0.5, 0.6, 0.7], np.float32), size=len(rows))  # many equal cosines
    got = _top_similar(index, rows, cos, 6)
    assert list(got) == sorted(got)
    assert set(got.tolist()) == _top_similar_reference(table, rows, cos, 6)


@pytest.mark.parametrize("seed", range(5))
def test_top_similar_keeps_each_databases_own_best(seed):
    """Several databases in one call: each keeps its own n best and the best of each of its parts,
    as one call per database would (the same part names recur across databases)."""
    from python_udfs.phrase_index import _top_similar

    rng = np.random.default_rng(100 + seed)
    n_rows = 90
    table = _parts_table(rng, n_rows, 30, 4)
    index = build_index(table)
    rows = np.sort(rng.choice(n_rows, size=60, replace=False))
    cos = rng.choice(np.array([0.5, 0.6, 0.7], np.float32), size=len(rows))
    got = _top_similar(index, rows, cos, 4, rows // 30)
    assert list(got) == sorted(got)
    want: set[int] = set()
    for db in range(3):
        mine = rows // 30 == db
        want |= _top_similar_reference(table, rows[mine], cos[mine], 4)
    assert set(got.tolist()) == want
    assert len(got) < len(rows)  # the cap bound something


def test_order_key_sorts_as_cosine_descending_then_label_rank():
    """The integer key's order is the float order reversed, NaN last, -0.0 equal to 0.0 (so the
    label decides between them), and the label rank between equal cosines."""
    from python_udfs.phrase_index import _order_key

    rng = np.random.default_rng(3)
    special = np.array([0.0, -0.0, 1.0, -1.0, np.nan, 1e-30, -1e-30, 0.5, 0.5, -0.5], np.float32)
    for _ in range(50):
        cos = np.concatenate([special, rng.choice(special, 20), rng.normal(size=20).astype(np.float32)])
        label_rank = rng.permutation(len(cos))
        want = sorted(range(len(cos)), key=lambda i: (np.isnan(cos[i]), 0.0 if np.isnan(cos[i]) else -float(cos[i]),
                                                       label_rank[i]))
        assert list(np.argsort(_order_key(cos, label_rank), kind="stable")) == want


def test_the_set_helpers_equal_numpys_own():
    """_unique/_union stand in for np.unique/np.union1d (whose first call imports
    numpy.ma): the same arrays, dtype and order on random inputs, empty and one-element ones too."""
    import numpy as np

    from python_udfs.phrase_index import _union, _unique

    rng = np.random.default_rng(7)
    for _ in range(500):
        a = rng.integers(0, 40, rng.integers(0, 25)).astype(np.int64)
        b = rng.integers(0, 40, rng.integers(0, 25)).astype(np.int64)
        assert np.array_equal(_unique(a), np.unique(a)) and _unique(a).dtype == np.unique(a).dtype
        assert np.array_equal(_union(a, b), np.union1d(a, b))


def test_candidate_slices_and_membership_equal_masks_and_intersections():
    """_Within.of (a posting list cut to the candidates' row ranges by binary search) and _member
    (sorted rows a sorted posting list holds) against a boolean mask and np.intersect1d."""
    from python_udfs.phrase_index import _member, _Within

    rng = np.random.default_rng(11)
    for _ in range(300):
        n = int(rng.integers(8, 200))
        cuts = np.sort(rng.choice(np.arange(n + 1), size=int(rng.integers(2, 8)), replace=False))
        ranges = [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:], strict=True) if rng.random() < 0.6]
        if not ranges:
            continue
        rows = np.concatenate([np.arange(a, b) for a, b in ranges])
        within = _Within(rows, np.array([a for a, _ in ranges]), np.array([b for _, b in ranges]))
        posting = np.unique(rng.integers(0, n, int(rng.integers(0, 60)))).astype(np.int64)
        inside = np.zeros(n, bool)
        inside[rows] = True
        assert np.array_equal(within.of(posting), posting[inside[posting]])
        assert np.array_equal(_member(rows, posting), np.intersect1d(rows, posting))
