"""python_udfs.document_index against DuckDB itself: the same documents in a table, the shortlist's
aggregates (top-n average, best label with ties to the larger label, global example votes) over
DuckDB's array_cosine_similarity scan and over the rows the index returns must agree."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from python_udfs.document_index import build_index, nearest, similarities

DIM = 8


def documents(seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(12):
        db = f"db{d:02d}"
        rows.append((db, "database", db, 1))
        rows += [(db, "table", f"t{t}", 1) for t in range(int(rng.integers(2, 6)))]
        rows += [(db, "example", f"select {e}", 1) for e in range(int(rng.integers(0, 14)))]
        rows += [(db, "column", f"t{c % 3}.c{c}", 2) for c in range(int(rng.integers(1, 9)))]
    vectors = rng.normal(size=(len(rows), DIM)).astype(np.float32)
    for kind in ("table", "column", "example"):  # equal vectors in one group: ties broken by label
        pair = [i for i, r in enumerate(rows) if r[1] == kind][:2]
        if len(pair) == 2 and rows[pair[0]][0] == rows[pair[1]][0]:
            vectors[pair[1]] = vectors[pair[0]]
    vectors[[i for i, r in enumerate(rows) if r[1] == "example"][2]] = 0  # cosine NaN: DuckDB orders it first
    return pa.table({"db_id": [r[0] for r in rows], "doc_kind": [r[1] for r in rows],
                     "doc_label": [r[2] for r in rows], "route_stage": pa.array([r[3] for r in rows], pa.int32()),
                     "embedding": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM)})


AGGREGATES = """
    with ranked as (select *, row_number() over (partition by doc_kind order by sim desc, doc_label) as vote_rank from hits)
    select db_id,
        max(case when doc_kind = 'database' then sim end) as s_database,
        coalesce(max(agg) filter (where doc_kind = 'table'),
                 list_avg(max(sim, 3) filter (where doc_kind = 'table'))) as s_table,
        coalesce(max(agg) filter (where doc_kind = 'column'),
                 list_avg(max(sim, 3) filter (where doc_kind = 'column'))) as s_column,
        max(case when doc_kind = 'example' then sim end) as s_example,
        arg_max(doc_label, (sim, doc_label)) filter (where doc_kind = 'table') as top_table,
        arg_max(doc_label, (sim, doc_label)) filter (where doc_kind = 'column') as top_column,
        arg_max(doc_label, (sim, doc_label)) filter (where doc_kind = 'example') as top_example,
        count(*) filter (where doc_kind = 'example' and vote_rank <= 10) as votes
    from ranked group by db_id order by db_id
"""


def aggregates(con, hits_sql: str, params: list) -> list[tuple]:
    con.execute(f"create or replace temp table hits as {hits_sql}", params)
    rows = con.execute(AGGREGATES).fetchall()
    return [tuple(("NaN" if x != x else round(x, 5)) if isinstance(x, float) else x for x in r) for r in rows]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_index_rows_give_the_scans_aggregates(seed):
    table = documents(seed)
    index = build_index(table)
    con = duckdb.connect()
    con.register("docs_arrow", table)
    con.execute(f"create table docs as select db_id, doc_kind, doc_label, route_stage, "
                f"cast(embedding as float[{DIM}]) as embedding from docs_arrow")
    q = np.random.default_rng(seed + 10).normal(size=DIM).astype(np.float32)
    scan = (f"select db_id, doc_kind, doc_label, array_cosine_similarity(embedding, cast(? as float[{DIM}])) as sim, "
            "cast(null as double) as agg from docs")
    for stage, dbs in ((1, None), (2, ["db03", "db00", "db07", "nosuch", "db03"])):
        where = f" where route_stage = {stage}" + (" and list_contains(?, db_id)" if dbs else "")
        expected = aggregates(con, scan + where, [q.tolist()] + ([dbs] if dbs else []))
        hits = nearest(index, q, stage, dbs, 3, 10)
        con.register("index_hits", pa.table({f: hits.field(f) for f in ("db_id", "doc_kind", "doc_label", "sim", "agg")}))
        got = aggregates(con, "select * from index_hits", [])
        assert got == expected, stage
        per_kind = con.execute("select count(*), count(distinct db_id) from index_hits where doc_kind in ('table', 'column')"
                               ).fetchall()[0]
        assert per_kind[0] == per_kind[1]  # one row a database for its tables (columns)
        kept = len(hits)
        total = con.execute(f"select count(*) from docs{where}", [dbs] if dbs else []).fetchall()[0][0]
        if stage == 1:
            assert kept < total  # only what the aggregates read


def test_bad_arguments_are_errors():
    index = build_index(documents())
    with pytest.raises(ValueError, match="stage must be 1 or 2"):
        nearest(index, np.ones(DIM), 3, None, 3, 10)
    with pytest.raises(ValueError, match="has 3 values"):
        nearest(index, np.ones(3), 1, None, 3, 10)
    empty = nearest(index, np.ones(DIM), 2, ["nosuch"], 3, 10)
    assert len(empty) == 0
    zero_question = nearest(index, np.zeros(DIM), 2, ["db01"], 3, 10)
    assert all(np.isnan(zero_question.field("sim").to_numpy(zero_copy_only=False)))


def test_unknown_kind_is_refused():
    table = documents().to_pydict()
    table["doc_kind"][0] = "statement"
    with pytest.raises(ValueError, match="unexpected kinds"):
        build_index(pa.table(table))


@pytest.mark.parametrize("n_top", [3, 9])
def test_the_mean_is_duckdbs_list_avg_bit_for_bit(n_top):
    """agg is the float64 mean DuckDB's list_avg(max(sim, n)) gives over the index's own cosines."""
    from python_udfs.blas import one_blas_thread

    rng = np.random.default_rng(n_top)
    rows = [(f"db{d}", "table", f"t{t}", 1) for d in range(40) for t in range(int(rng.integers(1, 14)))]
    vectors = rng.normal(size=(len(rows), DIM)).astype(np.float32)
    table = pa.table({"db_id": [r[0] for r in rows], "doc_kind": [r[1] for r in rows], "doc_label": [r[2] for r in rows],
                      "route_stage": pa.array([r[3] for r in rows], pa.int32()),
                      "embedding": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM)})
    index = build_index(table)
    q = rng.normal(size=DIM).astype(np.float32)
    with one_blas_thread():
        hits = nearest(index, q, 1, None, n_top, 10)
        a, b = index.stage_rows[1]
        sims = similarities(index.vectors[a:b], q / np.float32(np.linalg.norm(q)))
    con = duckdb.connect()
    con.register("all_sims", pa.table({"db": index.db_names.take(pa.array(index.db)), "sim": pa.array(sims)}))
    expected = dict(con.execute(f"select db, list_avg(max(sim, {n_top})) from all_sims group by db").fetchall())
    got = dict(zip(hits.field("db_id").to_pylist(), hits.field("agg").to_pylist(), strict=True))
    assert got == expected  # exact floats
