"""python_udfs.schema_scores and the UDF dbrouter_schema_scores against DuckDB itself: the
calibration's SQL (probe_schema_scores' default body: array_cosine_similarity, a row_number per
(probe, database, kind), max and averages of the top n) over the same documents must give the
same means, whatever the batches, with ties, zero vectors (NaN) and NULL vectors."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from python_udfs import schema_scores as ss
from python_udfs.embeddings import DIM
from python_udfs.plugin import _register_schema_scores

SQL = """
with hits as (
    select p.pid, d.db_id, d.doc_kind, array_cosine_similarity(d.embedding, p.v) as sim
    from probes as p join docs as d on d.doc_kind in ('database', 'table', 'column')),
ranked as (select *, row_number() over (partition by pid, db_id, doc_kind order by sim desc) as rn from hits)
select pid, db_id,
    max(case when doc_kind = 'database' then sim end),
    avg(case when doc_kind = 'table' and rn <= {nt} then sim end),
    avg(case when doc_kind = 'column' and rn <= {nc} then sim end)
from ranked group by all order by all
"""


def corpus(seed: int, dim: int = DIM):
    rng = np.random.default_rng(seed)
    n = 900
    db = [f"db{int(i):02d}" for i in rng.integers(0, 40, n)]
    kinds = rng.integers(0, 3, n)
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    vectors[10:15] = vectors[9]  # ties within one group
    db[9:15] = ["db07"] * 6
    kinds[9:15] = 1
    vectors[20] = 0  # cosine NaN: its group's mean is NaN, as DuckDB orders NaN first
    probes = rng.normal(size=(6, dim)).astype(np.float32)
    probes[4] = 0  # a zero probe: NaN everywhere
    probes[5] = vectors[9]  # a probe equal to the tied documents
    return db, kinds, vectors, probes


def duckdb_means(db, kinds, vectors, probes, nt, nc, null_rows=()):
    con = duckdb.connect()
    dim = vectors.shape[1]
    con.execute(f"create table docs (db_id varchar, doc_kind varchar, embedding float[{dim}])")
    con.executemany("insert into docs values (?, ?, ?)",
                    [(db[i], ss.KINDS[kinds[i]], None if i in null_rows else vectors[i].tolist())
                     for i in range(len(db))])
    con.execute(f"create table probes (pid integer, v float[{dim}])")
    con.executemany("insert into probes values (?, ?)", [(i, p.tolist()) for i, p in enumerate(probes)])
    return con, con.execute(SQL.format(nt=nt, nc=nc)).fetchall()


def assert_same(rows, names, means, present):
    index = {d: i for i, d in enumerate(names)}
    assert len(rows) == means.shape[0] * len(names)
    for pid, d, *parts in rows:
        for k, want in enumerate(parts):
            got = means[pid, index[d], k]
            if want is None:
                assert not present[index[d], k], (pid, d, k)
            elif want != want:
                assert np.isnan(got), (pid, d, k, got)
            else:
                assert present[index[d], k] and got == pytest.approx(want, abs=1e-6), (pid, d, k, got, want)


@pytest.mark.parametrize(("seed", "nt", "nc", "batch"), [(0, 3, 3, 100), (1, 2, 5, 900), (2, 1, 1, 7), (3, 3, 3, 1)])
def test_the_means_are_duckdbs_whatever_the_batches(seed, nt, nc, batch):
    db, kinds, vectors, probes = corpus(seed, dim=8)
    _, rows = duckdb_means(db, kinds, vectors, probes, nt, nc)
    batches = ((db[i:i + batch], kinds[i:i + batch], vectors[i:i + batch]) for i in range(0, len(db), batch))
    scores = ss.schema_scores(probes, batches, nt, nc)
    assert_same(rows, scores.db_names, scores.means, scores.present)
    assert np.isnan(scores.means[4]).all()  # the zero probe


def test_best_n_keeps_ties_and_pads_short_segments():
    sims = np.array([[0.3, 0.5, 0.9, 0.9, 0.1, 0.7]], np.float32)
    rows = np.array([1, 2, 3, 4, 0, 5])  # segments: documents 1-4, then 0 and 5
    got = ss._best_n(sims, rows, np.array([0, 4]), 3)
    assert got[0, 0].tolist() == pytest.approx([0.9, 0.9, 0.5])
    assert got[0, 1, :2].tolist() == pytest.approx([0.7, 0.3]) and np.isneginf(got[0, 1, 2])


def test_bad_arguments_say_what_is_wrong():
    with pytest.raises(ValueError, match="at least 1"):
        ss.schema_scores(np.zeros((1, 4), np.float32), [], 0, 3)
    with pytest.raises(ValueError, match="documents of 3 values, probes of 4"):
        ss.schema_scores(np.ones((1, 4), np.float32), [(["a"], np.array([0]), np.ones((1, 3), np.float32))], 3, 3)


def test_probe_blocks_bound_the_state():
    assert ss.probe_block(10_000, 3) * 10_000 * 5 * 12 <= ss.MAX_STATE_BYTES
    assert ss.probe_block(10**9, 3) == 1


def test_the_udf_reads_the_relation_and_answers_as_sql(monkeypatch):
    """Through DuckDB: a relation with NULL vectors, read in batches smaller than itself, probes
    in one chunk, one probe NULL; and a name that is not a table is refused."""
    import python_udfs.plugin as plugin

    monkeypatch.setattr(plugin, "SCHEMA_BATCH_ROWS", 64)
    db, kinds, vectors, probes = corpus(5)
    con, rows = duckdb_means(db, kinds, vectors, probes, 3, 3, null_rows={30, 31})
    _register_schema_scores(con)
    got = con.execute("""
        select pid, s.db_id, s.s_database, s.s_table, s.s_column
        from (select pid, unnest(dbrouter_schema_scores('main.docs', v, 3, 3)) as s from probes)
        order by all""").fetchall()
    assert con.execute("select dbrouter_schema_scores('main.docs', null, 3, 3)").fetchone()[0] is None
    names = sorted({d for d in db})
    means = np.full((len(probes), len(names), 3), np.nan)
    present = np.zeros((len(names), 3), bool)
    for pid, d, *parts in got:
        for k, x in enumerate(parts):
            if x is not None:
                means[pid, names.index(d), k] = x
                present[names.index(d), k] = True
    assert_same(rows, names, means, present)
    with pytest.raises(duckdb.Error, match="is not a table name"):
        con.execute("select dbrouter_schema_scores('docs; drop table docs', v, 3, 3) from probes").fetchall()
