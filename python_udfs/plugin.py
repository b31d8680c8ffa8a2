"""dbt-duckdb plugin registering dbrouter's Python UDFs on every connection.

Profile::

    plugins:
      - module: python_udfs.plugin
        config: {embedder: minilm}

Registered functions:

* ``embed(text VARCHAR) -> FLOAT[384]`` - arrow (vectorised) UDF; NULL for NULL/empty text.
* ``dbrouter_cosine(a FLOAT[], b FLOAT[]) -> DOUBLE`` - portable cosine (DuckDB's own
  ``array_cosine_similarity`` is what the models use; this one exists for parity tests).
* ``dbrouter_embedder() -> VARCHAR`` - name of the embedder this connection uses: the KB labels
  its vectors with it (macro ``embedder_label``) and routing compares only vectors of that model.
* ``dbrouter_canonicalize(text) -> VARCHAR`` - numbers/dates replaced by fixed placeholders.
* ``dbrouter_substrings(text, min_words, max_words) -> STRUCT(text, n_words)[]`` - contiguous
  word sub-strings (for sub-string based statement retrieval).
* ``dbrouter_structure_statement(statement, schema_json) -> VARCHAR`` - rule-based structuring
  of a domain statement, validated against the schema, as JSON.
* ``dbrouter_word_count(text) -> INTEGER`` - words as the sub-string splitter counts them.
* ``dbrouter_describe_example(question, sql, schema_json) -> VARCHAR`` - rule-based example
  descriptors (normalised question, main clause, requested entities, tables/columns) as JSON.
* ``dbrouter_normalize_question(question) -> VARCHAR`` - the same normalisation for an incoming
  question (no SQL).
* ``embed_phrase(text VARCHAR) -> FLOAT[384]`` - arrow UDF with the *phrase* embedder (static
  model2vec distilled from MiniLM; hash for the hash embedder), for question spans and column
  labels in the routing re-rank.
* ``dbrouter_content_words(question) -> VARCHAR[]`` - the question's content words (phrases).
* ``dbrouter_question_spans(question, max_words) -> STRUCT(span, words INTEGER[])[]`` - runs of
  consecutive content words and the 0-based content-word indices each covers.
* ``dbrouter_label_tokens(names VARCHAR[]) -> VARCHAR[]`` - normalised tokens of schema names.
* ``dbrouter_value_tokens(values VARCHAR[]) -> VARCHAR[]`` - normalised tokens of the short
  (at most 3-word) sample values; free text gives none.
* ``dbrouter_document_hits(relation, v FLOAT[384], stage INTEGER, dbs VARCHAR[], n_top INTEGER,
  n_votes INTEGER) -> STRUCT(db_id, doc_kind, doc_label, sim FLOAT, agg DOUBLE)[]`` - the UDF path's
  shortlist documents from a numpy matrix of ``relation``'s vectors (:mod:`python_udfs.document_index`);
  a database's tables (columns) come as one row, the best, with the mean of the ``n_top`` best in ``agg``.
* ``dbrouter_phrase_mappings(relation, model, dbs VARCHAR[], toks VARCHAR[][], vs FLOAT[384][],
  threshold DOUBLE, per_span INTEGER, spans VARCHAR[], words INTEGER[][]) -> STRUCT(db_id,
  word_index INTEGER, table_name, column_name, component, declared_component, similarity FLOAT, span,
  is_exact BOOLEAN, match_kind)[]`` - the re-rank's span mapping of the candidate databases (per
  column and question word, the best span) from ``relation``'s phrases of ``model`` held in the UDF
  process (:mod:`python_udfs.phrase_index`).
* ``dbrouter_term_postings(relation, term_column, text_column, number_column, terms VARCHAR[],
  dbs VARCHAR[]) -> STRUCT(db_id, term, text, number DOUBLE)[]`` - the rows of a lexical table
  (``kb_table_terms``, ``kb_vocabulary``, ``kb_route_tokens``) whose term is one of ``terms`` and,
  unless ``dbs`` is NULL, whose database is one of ``dbs``, from its postings held in the UDF
  process (:mod:`python_udfs.postings`); NULL columns read as NULL.
* ``dbrouter_best_text_sums(relation, term_column, text_column, number_column, terms VARCHAR[]) ->
  STRUCT(db_id, text, total DOUBLE)[]`` - from the same postings, each database's text (table)
  whose rows of ``terms`` have the largest sum of numbers (BM25 weights), and that sum: the
  shortlist's lexical channel, aggregated in the UDF process (:func:`python_udfs.postings.best_sums`).
* ``dbrouter_join_paths(relation, db_ids VARCHAR[], from_tables VARCHAR[], max_hops INTEGER) ->
  STRUCT(db_id, from_table, to_table, hops INTEGER, join_path)[]`` - every table reachable from each
  (database, table) source over the join edges of ``relation`` (``kb_walk_edges``) held in the UDF
  process, as the breadth-first walk of ``table_reachability`` gives them (:mod:`python_udfs.join_paths`).
* ``dbrouter_schema_scores(relation, v FLOAT[384], n_tables INTEGER, n_columns INTEGER) ->
  STRUCT(db_id, s_database DOUBLE, s_table DOUBLE, s_column DOUBLE)[]`` - a probe question's parts
  of the schema score over every database of ``relation`` (the routing calibration's probes,
  :mod:`python_udfs.schema_scores`); the relation is read in batches on every call.

Build-time only, for the pure-SQL query path (the KB materialises what they return):

* ``dbrouter_static_model() -> VARCHAR`` / ``dbrouter_static_tokenizer() -> VARCHAR`` - label of
  the phrase embedder's vectors (``m2v`` / ``hash``) and how SQL splits text for it
  (``wordpiece`` / ``hash``).
* ``dbrouter_static_pieces() -> VARCHAR[]`` - the phrase embedder's word-piece vocabulary.
* ``dbrouter_static_piece_vector(piece VARCHAR) -> FLOAT[384]`` - arrow UDF: a piece's raw
  (unnormalised) vector; NULL for a piece the model does not know.
* ``dbrouter_stop_words() -> VARCHAR[]`` - the stop words of :mod:`python_udfs.phrases`.
"""

from __future__ import annotations

import contextlib
import re
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
from duckdb.sqltypes import DOUBLE, FLOAT, VARCHAR

from python_udfs import arrow, join_paths, phrase_index, postings, schema_scores
from python_udfs.blas import one_blas_thread
from python_udfs.document_index import HIT_TYPE, DocumentIndex, build_index, nearest
from python_udfs.embeddings import (
    DIM,
    EMBEDDERS,
    EmbedderUnavailable,
    embed_arrow,
    get_embedder,
    get_phrase_embedder,
    resolve_embedder_name,
    static_model_label,
    static_piece_vectors,
    static_tokenizer,
    static_vocabulary,
)
from python_udfs.phrases import STOP_WORDS
from python_udfs.similarity import cosine_arrow
from python_udfs.udfs import TEXT_UDFS

UDF_NAMES = ("embed", "dbrouter_cosine", "dbrouter_embedder", "embed_phrase", *(u.name for u in TEXT_UDFS),
             "dbrouter_static_model", "dbrouter_static_tokenizer", "dbrouter_static_pieces",
             "dbrouter_static_piece_vector", "dbrouter_stop_words", "dbrouter_document_hits", "dbrouter_phrase_mappings",
             "dbrouter_term_postings", "dbrouter_best_text_sums", "dbrouter_join_paths", "dbrouter_schema_scores")

# Batches at least this large are bulk embedding (a build's documents, not a routed question):
# they print a progress line (DuckDB hands arrow UDFs up to 2,048 rows; a small KB's documents
# come in batches of a few hundred, and their first batch includes loading the model), at most
# one every PROGRESS_EVERY seconds: a batch a line was 308 lines for 630,454 documents.
PROGRESS_MIN_BATCH = 100
PROGRESS_EVERY = 5.0
_ANNOUNCED: set[str] = set()  # embedders whose first bulk batch was announced in this process

def register_udfs(conn: duckdb.DuckDBPyConnection, embedder: str | None = None, max_texts: int | None = None) -> None:
    """Register the dbrouter UDFs on ``conn`` (idempotent).

    Args:
        conn: an open DuckDB connection.
        embedder: embedder name (``minilm``/``m2v``/``hash``); default from
            :func:`python_udfs.embeddings.resolve_embedder_name`. ``dbrouter_embedder()`` returns
            this name, and the KB labels its vectors with it. The model itself is loaded lazily
            on the first ``embed`` call.
        max_texts: at most this many distinct texts per call of ``embed``/``embed_phrase`` (DuckDB
            passes up to 2,048 rows a call); more is an error. None: no limit (a build). The
            endpoint sets it: embedding a table is a build's work, and one query doing it held the
            GIL for a minute while every other client waited.

    Raises:
        EmbedderUnavailable: the name is not one of the shipped embedders.
    """
    name = resolve_embedder_name(embedder)
    if name not in EMBEDDERS:  # fail at registration, not at the first embed() of a build
        raise EmbedderUnavailable(f"unknown embedder {name!r}: choose one of {', '.join(EMBEDDERS)} "
                                  "(profile plugin config `embedder:` or $DBROUTER_EMBEDDER)")
    progress = {"done": 0, "started": 0.0, "shown": 0.0}

    def _bounded(texts: pa.Array, fn: str) -> None:
        if max_texts is None or len(texts) <= max_texts:
            return
        distinct = len(set(texts.to_pylist()))
        if distinct > max_texts:
            raise ValueError(f"{fn}() was given {distinct:,} distinct texts in one call; this connection embeds "
                             f"at most {max_texts:,} (embedding a table is `dbrouter build`'s work)")

    def _embed(texts: pa.Array) -> pa.Array:
        _bounded(texts, "embed")
        bulk = len(texts) >= PROGRESS_MIN_BATCH  # bulk embedding in a build, not a routed question
        if bulk and not progress["done"]:
            progress["started"] = time.time()
            if name not in _ANNOUNCED:  # once per process, not per connection
                _ANNOUNCED.add(name)
                print(f"dbrouter embed: embedding documents with {name} (the first batch loads the model)",
                      file=sys.stderr, flush=True)
        out = embed_arrow(texts, get_embedder(name))
        if bulk:
            progress["done"] += len(texts)
            now = time.time()
            if now - progress["shown"] >= PROGRESS_EVERY:
                progress["shown"] = now
                print(f"dbrouter embed: {progress['done']} documents embedded so far in this connection "
                      f"({now - progress['started']:.0f}s)", file=sys.stderr, flush=True)
        return out

    def _embedder_name() -> str:
        return name

    for fn in UDF_NAMES:
        with contextlib.suppress(Exception):  # not registered yet
            conn.remove_function(fn)
    conn.create_function(
        "embed", _embed, [VARCHAR], duckdb.array_type(FLOAT, DIM),
        type="arrow", null_handling="special", side_effects=False,
    )
    conn.create_function(
        "dbrouter_cosine", cosine_arrow, [duckdb.list_type(FLOAT), duckdb.list_type(FLOAT)],
        DOUBLE, type="arrow", null_handling="special",
    )
    conn.create_function("dbrouter_embedder", _embedder_name, [], VARCHAR, side_effects=False)
    for udf in TEXT_UDFS:  # the one table Snowflake's registration loops over too
        conn.create_function(udf.name, udf.handler, [duckdb.sqltype(t) for _, t in udf.args],
                             duckdb.sqltype(udf.returns), null_handling="special")

    def _embed_phrase(texts: pa.Array) -> pa.Array:
        _bounded(texts, "embed_phrase")
        return embed_arrow(texts, get_phrase_embedder(name))

    conn.create_function(
        "embed_phrase", _embed_phrase, [VARCHAR],
        duckdb.array_type(FLOAT, DIM), type="arrow", null_handling="special", side_effects=False,
    )
    _register_static(conn, name)
    _register_document_hits(conn, name)
    _register_phrase_mappings(conn)
    _register_term_postings(conn)
    _register_join_paths(conn)
    _register_schema_scores(conn)


RELATION = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$")
"""What dbrouter_document_hits accepts as the documents' relation: a (qualified) plain name."""


def _per_connection(conn: duckdb.DuckDBPyConnection, udf: str, load: Callable[..., Any]) -> Callable[..., Any]:
    """A cache of what ``load(cursor, relation, *key)`` reads, for one connection's life.

    It reads through a cursor of ``conn``, held weakly: the UDF lives in ``conn``, and a strong
    reference would be a cycle that never frees it (nanobind reported the leak at exit).

    Args:
        conn: the connection the UDF is registered on.
        udf: the UDF's name, for errors.
        load: builds the cached value from a cursor, the relation and the rest of the key.

    Returns:
        ``get(relation, *key)``: the cached value (loaded on the first call; one load at a time).
    """
    cache: dict[tuple, Any] = {}
    lock = threading.Lock()
    owner = weakref.ref(conn)

    def get(relation: str, *key: Any) -> Any:
        with lock:
            if (relation, *key) not in cache:
                if not RELATION.match(relation):
                    raise ValueError(f"{udf}: {relation!r} is not a table name")
                live = owner()
                if live is None:
                    raise RuntimeError(f"{udf}: its connection is closed")
                with live.cursor() as cur:
                    cache[(relation, *key)] = load(cur, relation, *key)
            return cache[(relation, *key)]

    return get


def _row_lists(n: int, row: Callable[[int], pa.Array | None], value_type: pa.DataType) -> pa.Array:
    """An Arrow UDF's list result: ``row(i)`` for each of its ``n`` input rows (None: a NULL list).

    Args:
        n: the input rows.
        row: the values of row ``i``'s list, or None for NULL.
        value_type: the lists' value type (for a result with no values).

    Returns:
        A list array of ``n`` rows.
    """
    offsets, parts, valid = [0], [], []
    for i in range(n):
        values = row(i)
        if values is not None:
            parts.append(values)
        offsets.append(offsets[-1] + (len(values) if values is not None else 0))
        valid.append(values is not None)
    values = pa.concat_arrays(parts) if parts else pa.nulls(0, value_type)
    return arrow.lists(offsets, values, null=~np.asarray(valid, bool))


def _register_document_hits(conn: duckdb.DuckDBPyConnection, name: str) -> None:
    """``dbrouter_document_hits(relation, v, stage, dbs, n_top, n_votes)``: the UDF path's shortlist
    documents from a numpy matrix (:mod:`python_udfs.document_index`).

    The matrix of ``relation``'s rows of this connection's embedder is read on the first call
    (through a cursor of ``conn``) and kept for the connection's life: a rebuilt warehouse is a
    new connection (``dbrouter serve`` reopens it), so it never serves a previous build's vectors.
    """
    def _load(cur: duckdb.DuckDBPyConnection, relation: str) -> DocumentIndex:
        return build_index(cur.sql(f"select db_id, doc_kind, doc_label, route_stage, embedding from {relation} "
                                   "where embedding_model = ? and route_stage is not null",
                                   params=[name]).to_arrow_table())

    _index = _per_connection(conn, "dbrouter_document_hits", _load)

    def _hits(relation: pa.Array, v: pa.Array, stage: pa.Array, dbs: pa.Array, n_top: pa.Array,
              n_votes: pa.Array) -> pa.Array:
        def row(i: int) -> pa.Array | None:
            if not (v[i].is_valid and relation[i].is_valid and stage[i].is_valid):
                return None
            index = _index(relation[i].as_py())
            with one_blas_thread():  # a question's product: spinning BLAS threads only burn CPU
                return nearest(index, arrow.to_numpy(v[i].values, np.float32), stage[i].as_py(),
                               dbs[i].as_py() if dbs[i].is_valid else None, n_top[i].as_py() or 0,
                               n_votes[i].as_py() or 0)

        return _row_lists(len(v), row, HIT_TYPE)

    conn.create_function(
        "dbrouter_document_hits", _hits,
        [VARCHAR, duckdb.array_type(FLOAT, DIM), duckdb.sqltype("INTEGER"), duckdb.list_type(VARCHAR),
         duckdb.sqltype("INTEGER"), duckdb.sqltype("INTEGER")],
        duckdb.list_type(duckdb.struct_type({"db_id": VARCHAR, "doc_kind": VARCHAR, "doc_label": VARCHAR,
                                             "sim": FLOAT, "agg": duckdb.sqltype("DOUBLE")})),
        type="arrow", null_handling="special", side_effects=False)


def _register_phrase_mappings(conn: duckdb.DuckDBPyConnection) -> None:
    """``dbrouter_phrase_mappings(relation, model, dbs, toks, vs, threshold, per_span, spans, words)``: the
    re-rank's span mapping from the column phrases held in the UDF process
    (:func:`python_udfs.phrase_index.span_mappings`); the spans' tokens, vectors, texts and word lists
    are parallel lists.

    ``relation``'s phrases of ``model`` are read on the first call (through a cursor of ``conn``)
    and kept for the connection's life, as ``dbrouter_document_hits`` keeps its matrix.
    """
    def _load(cur: duckdb.DuckDBPyConnection, relation: str, model: str) -> phrase_index.PhraseIndex:
        return phrase_index.build_index(cur.sql(f"select {', '.join(phrase_index.COLUMNS)} from {relation} "
                                                "where phrase_model = ? order by db_id, rowid", params=[model]).to_arrow_table())

    _index = _per_connection(conn, "dbrouter_phrase_mappings", _load)

    def _mappings(relation: pa.Array, model: pa.Array, dbs: pa.Array, toks: pa.Array, vs: pa.Array,
                  threshold: pa.Array, per_span: pa.Array, spans: pa.Array, words: pa.Array) -> pa.Array:
        def row(i: int) -> pa.Array | None:
            if not (relation[i].is_valid and model[i].is_valid and threshold[i].is_valid):
                return None
            tokens = toks[i].as_py() if toks[i].is_valid else []
            vectors = [arrow.to_numpy(v.values, np.float32) if v.is_valid else None for v in vs[i].values] \
                if vs[i].is_valid else []
            index = _index(relation[i].as_py(), model[i].as_py())
            with one_blas_thread():
                return phrase_index.span_mappings(
                    index, dbs[i].as_py() if dbs[i].is_valid else None, [t or [] for t in tokens], vectors,
                    float(threshold[i].as_py()), per_span[i].as_py() if per_span[i].is_valid else None,
                    spans[i].as_py() if spans[i].is_valid else [], words[i].as_py() if words[i].is_valid else [])

        return _row_lists(len(relation), row, phrase_index.MAPPING_TYPE)

    conn.create_function(
        "dbrouter_phrase_mappings", _mappings,
        [VARCHAR, VARCHAR, duckdb.list_type(VARCHAR), duckdb.list_type(duckdb.list_type(VARCHAR)),
         duckdb.list_type(duckdb.array_type(FLOAT, DIM)), DOUBLE, duckdb.sqltype("INTEGER"), duckdb.list_type(VARCHAR),
         duckdb.list_type(duckdb.list_type(duckdb.sqltype("INTEGER")))],
        duckdb.list_type(duckdb.struct_type({"db_id": VARCHAR, "word_index": duckdb.sqltype("INTEGER"),
                                             "table_name": VARCHAR, "column_name": VARCHAR, "component": VARCHAR,
                                             "declared_component": VARCHAR, "similarity": FLOAT, "span": VARCHAR,
                                             "is_exact": duckdb.sqltype("BOOLEAN"), "match_kind": VARCHAR})),
        type="arrow", null_handling="special", side_effects=False)


COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""What dbrouter_term_postings accepts as a column name: a plain identifier."""


def _register_term_postings(conn: duckdb.DuckDBPyConnection) -> None:
    """``dbrouter_term_postings(relation, term_column, text_column, number_column, terms, dbs)``: the rows
    of a lexical table whose term is one of ``terms`` (of the databases ``dbs`` only, unless NULL),
    from its postings held in the UDF process
    (:mod:`python_udfs.postings`), instead of a scan of every row; and
    ``dbrouter_best_text_sums(relation, term_column, text_column, number_column, terms)``: from the
    same postings, each database's best text by the sum of its rows' numbers (:func:`postings.best_sums`).

    ``relation``'s rows are read on the first call for those columns (through a cursor of ``conn``)
    and kept for the connection's life, as ``dbrouter_document_hits`` keeps its matrix. A NULL
    text / number column reads as NULL in every row.
    """
    def _load(cur: duckdb.DuckDBPyConnection, relation: str, term: str, text: str | None,
              number: str | None) -> postings.Postings:
        for column in (term, text, number):
            if column is not None and not COLUMN.match(column):
                raise ValueError(f"dbrouter_term_postings: {column!r} is not a column name")
        text_sql = f"cast({text} as varchar)" if text else "cast(null as varchar)"
        number_sql = f"cast({number} as double)" if number else "cast(null as double)"
        return postings.build_postings(cur.sql(
            f"select cast(db_id as varchar) as db_id, cast({term} as varchar) as term, {text_sql} as text, "
            f"{number_sql} as number, dense_rank() over (order by {term}) as term_no "
            f"from {relation} where {term} is not null order by {term}").to_arrow_table())

    _postings = _per_connection(conn, "dbrouter_term_postings", _load)

    def _rows(relation: pa.Array, term: pa.Array, text: pa.Array, number: pa.Array, terms: pa.Array,
              dbs: pa.Array) -> pa.Array:
        def row(i: int) -> pa.Array | None:
            if not (relation[i].is_valid and term[i].is_valid and terms[i].is_valid):
                return None
            held = _postings(relation[i].as_py(), term[i].as_py(), text[i].as_py(), number[i].as_py())
            return postings.lookup(held, terms[i].values.to_pylist(),
                                   dbs[i].values.to_pylist() if dbs[i].is_valid else None)

        return _row_lists(len(relation), row, postings.POSTING_TYPE)

    conn.create_function(
        "dbrouter_term_postings", _rows,
        [VARCHAR, VARCHAR, VARCHAR, VARCHAR, duckdb.list_type(VARCHAR), duckdb.list_type(VARCHAR)],
        duckdb.list_type(duckdb.struct_type({"db_id": VARCHAR, "term": VARCHAR, "text": VARCHAR, "number": DOUBLE})),
        type="arrow", null_handling="special", side_effects=False)

    def _best(relation: pa.Array, term: pa.Array, text: pa.Array, number: pa.Array, terms: pa.Array) -> pa.Array:
        def row(i: int) -> pa.Array | None:
            if not all(a[i].is_valid for a in (relation, term, text, number, terms)):
                return None
            held = _postings(relation[i].as_py(), term[i].as_py(), text[i].as_py(), number[i].as_py())
            return postings.best_sums(held, terms[i].values.to_pylist())

        return _row_lists(len(relation), row, postings.BEST_TYPE)

    conn.create_function(
        "dbrouter_best_text_sums", _best,
        [VARCHAR, VARCHAR, VARCHAR, VARCHAR, duckdb.list_type(VARCHAR)],
        duckdb.list_type(duckdb.struct_type({"db_id": VARCHAR, "text": VARCHAR, "total": DOUBLE})),
        type="arrow", null_handling="special", side_effects=False)


def _register_join_paths(conn: duckdb.DuckDBPyConnection) -> None:
    """``dbrouter_join_paths(relation, db_ids, from_tables, max_hops)``: the join paths from each
    source table over ``relation``'s edges held in the UDF process (:mod:`python_udfs.join_paths`),
    instead of a scan of every edge and a recursive CTE.

    ``relation``'s edges are read on the first call (through a cursor of ``conn``) and kept for the
    connection's life, as ``dbrouter_document_hits`` keeps its matrix.
    """
    def _load(cur: duckdb.DuckDBPyConnection, relation: str) -> join_paths.JoinGraph:
        return join_paths.build_graph(cur.sql(
            f"select cast(db_id as varchar) as db_id, cast(from_table as varchar) as from_table, "
            f"cast(to_table as varchar) as to_table from {relation} order by db_id, from_table, to_table").to_arrow_table())

    _graph = _per_connection(conn, "dbrouter_join_paths", _load)

    def _rows(relation: pa.Array, db_ids: pa.Array, from_tables: pa.Array, max_hops: pa.Array) -> pa.Array:
        def row(i: int) -> pa.Array | None:
            if not (relation[i].is_valid and db_ids[i].is_valid and from_tables[i].is_valid and max_hops[i].is_valid):
                return None
            dbs, froms = db_ids[i].values.to_pylist(), from_tables[i].values.to_pylist()
            if len(dbs) != len(froms):
                raise ValueError(f"dbrouter_join_paths: {len(dbs)} databases for {len(froms)} tables")
            return join_paths.walk(_graph(relation[i].as_py()), dbs, froms, max(int(max_hops[i].as_py()), 0))

        return _row_lists(len(relation), row, join_paths.PATH_TYPE)

    conn.create_function(
        "dbrouter_join_paths", _rows,
        [VARCHAR, duckdb.list_type(VARCHAR), duckdb.list_type(VARCHAR), duckdb.sqltype("INTEGER")],
        duckdb.list_type(duckdb.struct_type({"db_id": VARCHAR, "from_table": VARCHAR, "to_table": VARCHAR,
                                             "hops": duckdb.sqltype("INTEGER"), "join_path": VARCHAR})),
        type="arrow", null_handling="special", side_effects=False)


SCHEMA_BATCH_ROWS = 8_192
"""Documents read per batch by ``dbrouter_schema_scores`` (12.5 MB of 384-d vectors: the build's
DuckDB holds up to its memory limit beside it, so the UDF keeps little of its own)."""


def _register_schema_scores(conn: duckdb.DuckDBPyConnection) -> None:
    """``dbrouter_schema_scores(relation, v, n_tables, n_columns)``: each probe row's schema-score
    parts over every database of ``relation`` (:mod:`python_udfs.schema_scores`).

    A build-time function (the routing calibration): ``relation`` is read through a cursor of
    ``conn`` in batches on every call, nothing is kept, so it always sees the committed table and
    holds no more than a batch of its vectors. DuckDB hands the probes in chunks of up to 2,048
    rows; each chunk is one pass over the documents per block of probes.
    """
    owner = weakref.ref(conn)
    kind_code = {k: i for i, k in enumerate(schema_scores.KINDS)}

    def _batches(cur: duckdb.DuckDBPyConnection, relation: str):
        reader = cur.sql(f"select db_id, doc_kind, embedding from {relation} "
                         "where doc_kind in ('database', 'table', 'column')").to_arrow_reader(SCHEMA_BATCH_ROWS)
        for batch in reader:
            if not batch.num_rows:
                continue
            vectors, valid = arrow.to_matrix(batch.column(2))
            kinds = np.fromiter((kind_code[k] for k in batch.column(1).to_pylist()), np.int64, batch.num_rows)
            kinds[~valid] = -1  # a NULL vector: its database counts, the row scores nothing
            yield batch.column(0).to_pylist(), kinds, vectors

    def _scores(relation: pa.Array, v: pa.Array, n_tables: pa.Array, n_columns: pa.Array) -> pa.Array:
        results: list[pa.StructArray | None] = [None] * len(v)
        todo: dict[tuple, list[int]] = {}
        for i in range(len(v)):
            if relation[i].is_valid and v[i].is_valid and n_tables[i].is_valid and n_columns[i].is_valid:
                key = (relation[i].as_py(), n_tables[i].as_py(), n_columns[i].as_py())
                todo.setdefault(key, []).append(i)
        for (rel, nt, nc), rows in todo.items():
            if not RELATION.match(rel):
                raise ValueError(f"dbrouter_schema_scores: {rel!r} is not a table name")
            live = owner()
            if live is None:
                raise RuntimeError("dbrouter_schema_scores: its connection is closed")
            probes = np.stack([arrow.to_numpy(v[i].values, np.float32) for i in rows])
            with live.cursor() as cur:
                dbs = cur.execute(f"select count(distinct db_id) from {rel}").fetchall()[0][0]
                block = schema_scores.probe_block(dbs, max(nt, nc))
                for lo in range(0, len(rows), block):
                    scored = schema_scores.schema_scores(probes[lo:lo + block], _batches(cur, rel), nt, nc)
                    for i, arr in zip(rows[lo:lo + block], schema_scores.to_arrow(scored), strict=True):
                        results[i] = arr
        offsets, valid = [0], []
        for r in results:
            offsets.append(offsets[-1] + (len(r) if r is not None else 0))
            valid.append(r is not None)
        parts = [r for r in results if r is not None]
        values = pa.concat_arrays(parts) if parts else pa.nulls(0, schema_scores.SCORE_TYPE)
        return arrow.lists(offsets, values, null=~np.asarray(valid, bool))

    conn.create_function(
        "dbrouter_schema_scores", _scores,
        [VARCHAR, duckdb.array_type(FLOAT, DIM), duckdb.sqltype("INTEGER"), duckdb.sqltype("INTEGER")],
        duckdb.list_type(duckdb.struct_type({"db_id": VARCHAR, "s_database": DOUBLE, "s_table": DOUBLE,
                                             "s_column": DOUBLE})),
        type="arrow", null_handling="special", side_effects=False)


def _register_static(conn: duckdb.DuckDBPyConnection, name: str) -> None:
    """The build-time UDFs that materialise the static phrase embedder for the pure-SQL path."""
    conn.create_function("dbrouter_static_model", lambda: static_model_label(name), [], VARCHAR, side_effects=False)
    conn.create_function("dbrouter_static_tokenizer", lambda: static_tokenizer(name), [], VARCHAR,
                         side_effects=False)
    conn.create_function("dbrouter_static_pieces", lambda: static_vocabulary(name), [], duckdb.list_type(VARCHAR),
                         side_effects=False)
    conn.create_function(
        "dbrouter_static_piece_vector", lambda pieces: _piece_arrow(pieces, name), [VARCHAR],
        duckdb.array_type(FLOAT, DIM), type="arrow", null_handling="special", side_effects=False,
    )
    conn.create_function("dbrouter_stop_words", lambda: sorted(STOP_WORDS), [], duckdb.list_type(VARCHAR),
                         side_effects=False)


def _piece_arrow(pieces: pa.Array, name: str) -> pa.Array:
    vecs = static_piece_vectors(pieces.to_pylist(), name)
    flat = np.zeros((len(vecs), DIM), dtype=np.float32)
    for i, vec in enumerate(vecs):
        if vec is not None:
            flat[i] = vec
    return arrow.vectors(flat, null=np.fromiter((vec is None for vec in vecs), bool, len(vecs)))










def _plugin_class() -> type:
    """The dbt-duckdb plugin class: ``configure_connection`` registers the UDFs."""
    from dbt.adapters.duckdb.plugins import BasePlugin

    class Plugin(BasePlugin):
        def initialize(self, plugin_config: dict[str, Any]) -> None:
            self.embedder = plugin_config.get("embedder") or None

        def configure_connection(self, conn: duckdb.DuckDBPyConnection) -> None:
            register_udfs(conn, self.embedder)

    return Plugin


def __getattr__(name: str) -> Any:
    """``Plugin`` is built on first access (dbt-duckdb's loader asks for it): importing dbt's base
    class costs 0.8 s, which `dbrouter.connect` (and so a cold `dbrouter route`) does not pay."""
    if name == "Plugin":
        cls = _plugin_class()
        globals()["Plugin"] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
