"""What the LLM-free linker knows about each column of a database for one question.

Signals come from the KB in one read per database (:func:`load_signals`): the vectors of its
column, table, example and statement documents, the columns each stored example's SQL uses
(``kb_examples.columns_used``), the columns each domain statement names
(``kb_domain_statements.referenced_columns``) and the join edges. :func:`column_features` turns
them into one database-agnostic feature row per column (similarities, ranks, margins, votes of
the nearest examples and statements, exact word matches, key flags) for the logistic model of
:mod:`dbrouter.linking.weights`. Nothing here names a database, so the model transfers to
databases it never saw (``python -m dbrouter.tune.linker`` fits it on train splits only).
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

from dbrouter.connection import Connection
from dbrouter.linking.columns import SchemaColumn

BASE_FEATURES = ("cos", "cos_margin", "inv_rank", "ex_max", "ex_sum", "ex_top1", "tab_ex", "tab_cos",
                 "tab_cos_margin", "tab_maxcol", "lex_col", "lex_tab", "pk", "fk", "st_max", "log_ncols", "st_lex",
                 "ident_in_question", "co_use")
"""One signal each (see :func:`column_features`)."""
CROSSED = ("cos_margin", "inv_rank", "ex_max", "ex_sum", "ex_top1", "tab_ex", "tab_cos_margin", "lex_col", "lex_tab",
           "st_max", "st_lex")
"""Signals whose pairwise products are features too (a linear model cannot weigh one signal by another)."""
FEATURES = BASE_FEATURES + tuple(f"{a}*{b}" for a, b in itertools.combinations(CROSSED, 2)) + ("bias",)
"""Feature order of the model (``bias`` is the constant 1)."""

TOP_EXAMPLES = 15
"""How many nearest stored examples vote for the columns their SQL uses."""
TOP_STATEMENTS = 8
"""How many nearest domain statements vote for the columns they name (structured references)."""
TOP_STATEMENT_TEXTS = 10
"""How many nearest domain statements are searched for a column's identifier in their text."""

_WORD = re.compile(r"[a-z0-9]+")
_IDENT = re.compile(r"[a-z0-9_]+")
_NON_ALNUM = re.compile(r"[^a-z0-9]")
_CAMEL = re.compile(r"([a-z])([A-Z])")
_STOP = frozenset(
    ["the", "a", "an", "of", "in", "on", "for", "to", "and", "or", "is", "are", "was", "were", "what", "which", "who", "how", "many", "much", "with", "by", "from", "at", "as", "that", "this", "these", "those", "do", "does", "did", "name", "names", "list", "show", "give", "find", "all", "each", "their", "its", "be", "have", "has", "number", "count", "id"])


def _stem(w: str) -> str:
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith("es") and len(w) > 4 and w[-3] in "sxz":
        return w[:-2]
    if w.endswith("s") and not w.endswith("ss") and len(w) > 3:
        return w[:-1]
    return w


def words(text: str | None) -> set[str]:
    """Lower-case, singular-ish words of a question or an identifier (camelCase and snake_case split).

    Args:
        text: any text.

    Returns:
        The set of word stems.
    """
    if not text:
        return set()
    text = _CAMEL.sub(r"\1 \2", text).lower().replace("_", " ")
    return {_stem(w) for w in _WORD.findall(text)}


@dataclass
class DatabaseSignals:
    """One database's linking signals, read from the KB once (see :func:`load_signals`)."""

    db_id: str
    columns: list[tuple[str, str, bool, bool, str]] = field(default_factory=list)
    """(table, column, is_primary_key, is_foreign_key, label) in KB order."""
    schema_columns: list[SchemaColumn] = field(default_factory=list)
    """The same columns as the KB describes them (types, keys, samples), for the linked result."""
    column_vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    tables: list[str] = field(default_factory=list)
    table_vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    examples: list[tuple[str, list[str], list[str]]] = field(default_factory=list)
    """(question, lower-case columns used, lower-case tables used)."""
    example_vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    statements: list[tuple[str, list[str]]] = field(default_factory=list)
    """(statement text, lower-case columns it names)."""
    statement_vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    edges: list[tuple[str, str, str, str, bool]] = field(default_factory=list)
    """Join edges (from_table, from_column, to_table, to_column, is_declared), lower-case."""
    _co_use: tuple[dict, dict] | None = field(default=None, repr=False)
    _table_words: dict | None = field(default=None, repr=False)

    def table_words(self) -> dict:
        """Each table's words for table-level BM25 (:func:`table_words`), computed once."""
        if self._table_words is None:
            self._table_words = table_words(self)
        return self._table_words

    def co_use_counts(self) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
        """(examples using each column, examples using each pair of columns), computed once."""
        if self._co_use is None:
            single: dict[str, int] = defaultdict(int)
            pairs: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
            for _q, cols, _t in self.examples:
                used = set(cols)
                for a in used:
                    single[a] += 1
                    for b in used - {a}:
                        pairs[a][b] += 1
            self._co_use = (single, pairs)
        return self._co_use

    @property
    def names(self) -> list[str]:
        """Lower-case ``table.column`` of every column, in :attr:`columns` order."""
        return [f"{t.lower()}.{c.lower()}" for t, c, *_ in self.columns]


def table_words(sig: DatabaseSignals) -> dict[str, Counter]:
    """Each table's words (lower-case name): its name and each column's name, label and description.

    Args:
        sig: the database's signals.

    Returns:
        table -> word counts.
    """
    out: dict[str, Counter] = defaultdict(Counter)
    for (t, c, _pk, _fk, label), col in zip(sig.columns, sig.schema_columns):
        bag = out[t.lower()]
        if not bag:
            bag.update(words(t))
        bag.update(words(c) | words(label) | words(col.description))
    return dict(out)


def _stack(vectors: list) -> np.ndarray:
    return np.asarray(vectors, dtype=np.float32) if vectors else np.zeros((0, 1), np.float32)


def load_signals(con: Connection, db: str) -> DatabaseSignals:
    """Read one database's linking signals from the KB.

    Args:
        con: connection from :func:`dbrouter.connect`.
        db: the database.

    Returns:
        The :class:`DatabaseSignals` (documents without a vector are skipped).
    """
    sig = DatabaseSignals(db)
    # e.db_id = ? repeats what the document id implies as a value the scan filters on: a join on
    # the id alone read every database's vectors (10,000 databases: 4 x 630k rows, ~150 ms a call)
    emb = ("join kb_document_embeddings e on e.document_id = {doc} and e.embedding_model = dbrouter_embedder() "
           "and e.db_id = ?")
    cols = con.execute(
        "select c.table_name, c.column_name, c.data_type, c.is_primary_key, c.is_foreign_key, c.references_text, "
        "coalesce(c.column_description, c.value_description), c.sample_values, coalesce(c.column_label, ''), "
        f"e.embedding from kb_columns c {emb.format(doc=chr(39) + 'column:' + chr(39) + ' || c.column_key')} "
        "where c.db_id = ? order by c.table_name, c.ordinal_position, c.column_name", [db, db]).fetchall()
    sig.schema_columns = [SchemaColumn.from_row(r[:8]) for r in cols]
    sig.columns = [(c.table, c.column, c.primary_key, c.foreign_key, r[8]) for c, r in zip(sig.schema_columns, cols)]
    sig.column_vectors = _stack([r[9] for r in cols])
    tabs = con.execute(f"select t.table_name, e.embedding from kb_tables t "
                       f"{emb.format(doc=chr(39) + 'table:' + chr(39) + ' || t.table_key')} where t.db_id = ? "
                       "order by t.table_name", [db, db]).fetchall()
    sig.tables, sig.table_vectors = [t.lower() for t, _ in tabs], _stack([v for _, v in tabs])
    exs = con.execute(f"select x.question, x.columns_used, x.tables_used, e.embedding from kb_examples x "
                      f"{emb.format(doc=chr(39) + 'example:' + chr(39) + ' || x.example_id')} where x.db_id = ? "
                      "order by x.example_id", [db, db]).fetchall()
    sig.examples = [(q, [c.lower() for c in cu or []], [t.lower() for t in tu or []]) for q, cu, tu, _ in exs]
    sig.example_vectors = _stack([r[3] for r in exs])
    sts = con.execute(f"select s.statement_text, s.referenced_columns, e.embedding from kb_domain_statements s "
                      f"{emb.format(doc=chr(39) + 'statement:' + chr(39) + ' || s.statement_id')} "
                      "where s.db_id = ? order by s.statement_id", [db, db]).fetchall()
    sig.statements = [(t, [c.lower() for c in refs or []]) for t, refs, _ in sts]
    sig.statement_vectors = _stack([r[2] for r in sts])
    sig.edges = [(ft.lower(), fc.lower(), tt.lower(), tc.lower(), bool(d)) for ft, fc, tt, tc, d in con.execute(
        "select from_table, from_column, to_table, to_column, is_declared from kb_join_edges where db_id = ? "
        "order by 1, 2, 3, 4", [db]).fetchall()]
    return sig


def _example_votes(sig: DatabaseSignals, qv: np.ndarray, idx: dict[str, int], skip_question: str | None):
    n = len(sig.columns)
    ex_max, ex_sum, ex_top1 = np.zeros(n), np.zeros(n), np.zeros(n)
    tab_ex: dict[str, float] = defaultdict(float)
    if not sig.examples:
        return ex_max, ex_sum, ex_top1, tab_ex
    sims = sig.example_vectors @ qv
    order = [i for i in np.argsort(-sims, kind="stable")[:TOP_EXAMPLES + 1]
             if sig.examples[i][0] != skip_question][:TOP_EXAMPLES]
    for rank, i in enumerate(order):
        w = float(sims[i])
        for c in sig.examples[i][1]:
            j = idx.get(c)
            if j is not None:
                ex_max[j], ex_sum[j] = max(ex_max[j], w), ex_sum[j] + w
                ex_top1[j] = 1.0 if rank == 0 else ex_top1[j]
        for t in sig.examples[i][2]:
            tab_ex[t] = max(tab_ex[t], w)
    return ex_max, ex_sum, ex_top1, tab_ex


CO_USE_ANCHORS = 3
"""Columns most similar to the question that anchor the co-use feature (with the nearest example's)."""


def _co_use(sig: DatabaseSignals, cos: np.ndarray, ex_top1: np.ndarray, skip_question: str | None) -> np.ndarray:
    """Per column: the highest share of the stored examples using an anchor column that also use
    this column (first and last name, latitude and longitude travel together). Anchors: the
    ``CO_USE_ANCHORS`` columns most similar to the question and the nearest example's columns.
    The skipped question's own example is left out of the counts."""
    names = sig.names
    out = np.zeros(len(names))
    if not sig.examples:
        return out
    single, pairs = sig.co_use_counts()
    own = next((set(cols) for q, cols, _t in sig.examples if q == skip_question), set()) if skip_question else set()
    anchors = {names[i] for i in np.argsort(-cos, kind="stable")[:CO_USE_ANCHORS]}
    anchors |= {names[i] for i in np.flatnonzero(ex_top1)}
    for a in anchors:
        total = single.get(a, 0) - (a in own)
        if total <= 0:
            continue
        for j, c in enumerate(names):
            if c != a:
                shared = pairs.get(a, {}).get(c, 0) - (a in own and c in own)
                out[j] = max(out[j], shared / total)
    return out


def _nearest_statements(sig: DatabaseSignals, qv: np.ndarray, k: int, skip: frozenset[str]) -> list[tuple[int, float]]:
    """(index, similarity) of the ``k`` statements nearest to the question, ``skip`` texts left out."""
    if not sig.statements:
        return []
    sims = sig.statement_vectors @ qv
    order = [i for i in np.argsort(-sims, kind="stable") if sig.statements[i][0].strip() not in skip]
    return [(int(i), float(sims[i])) for i in order[:k]]


def _statement_votes(sig: DatabaseSignals, qv: np.ndarray, idx: dict[str, int], skip: frozenset[str]) -> np.ndarray:
    st_max = np.zeros(len(sig.columns))
    if sig.statements:
        for i, sim in _nearest_statements(sig, qv, TOP_STATEMENTS, skip):
            for c in sig.statements[i][1]:
                j = idx.get(c)
                if j is not None:
                    st_max[j] = max(st_max[j], sim)
    return st_max


def _flat(text: str) -> str:
    return _NON_ALNUM.sub("", text.lower())


def _statement_mentions(sig: DatabaseSignals, qv: np.ndarray, skip: frozenset[str]) -> np.ndarray:
    """Per column: the best similarity of a nearest statement whose text names the column's
    identifier (as a word, or spelled without separators when it is 6+ characters long)."""
    out = np.zeros(len(sig.columns))
    if not sig.statements:
        return out
    texts = [(_flat(sig.statements[i][0]), set(_IDENT.findall(sig.statements[i][0].lower())), sim)
             for i, sim in _nearest_statements(sig, qv, TOP_STATEMENT_TEXTS, skip)]
    for j, (_t, c, *_r) in enumerate(sig.columns):
        low, flat = c.lower(), _flat(c)
        for text_flat, idents, sim in texts:
            if low in idents or (len(flat) >= 6 and flat in text_flat):
                out[j] = max(out[j], sim)
    return out


def column_features(question: str, qv: np.ndarray, sig: DatabaseSignals,
                    skip_question: str | None = None, skip_statements: frozenset[str] = frozenset()) -> np.ndarray:
    """One feature row per column of ``sig`` (order :data:`FEATURES`).

    Args:
        question: the question text (for exact word matches).
        qv: its unit-length vector (same embedder as the KB's documents).
        sig: the database's signals.
        skip_question: a stored example with exactly this question does not vote (training on a
            split whose questions are themselves the KB's examples).
        skip_statements: statements with these texts do not vote (training: a train question's own
            evidence is among the KB's statements and would give its columns away).

    Returns:
        A ``(n_columns, len(FEATURES))`` float32 array.
    """
    names = sig.names
    n = len(names)
    if n == 0:
        return np.zeros((0, len(FEATURES)), np.float32)
    idx = {nm: i for i, nm in enumerate(names)}
    cos = sig.column_vectors @ qv
    rank = np.empty(n)
    rank[np.argsort(-cos, kind="stable")] = np.arange(1, n + 1)
    ex_max, ex_sum, ex_top1, tab_ex = _example_votes(sig, qv, idx, skip_question)
    st_max = _statement_votes(sig, qv, idx, skip_statements)
    tcos = dict(zip(sig.tables, (sig.table_vectors @ qv).tolist())) if sig.tables else {}
    tmax = max(tcos.values()) if tcos else 0.0
    tmaxcol: dict[str, float] = defaultdict(float)
    for i, (t, *_r) in enumerate(sig.columns):
        tmaxcol[t.lower()] = max(tmaxcol[t.lower()], float(cos[i]))
    st_lex = _statement_mentions(sig, qv, skip_statements)
    co_use = _co_use(sig, cos, ex_top1, skip_question)
    qwords, qflat = words(question) - _STOP, _flat(question)
    base = np.zeros((n, len(BASE_FEATURES)), np.float32)
    for i, (t, c, pk, fk, label) in enumerate(sig.columns):
        tl, cflat = t.lower(), _flat(c)
        base[i] = (cos[i], cos[i] - cos.max(), 1.0 / rank[i], ex_max[i], ex_sum[i], ex_top1[i], tab_ex.get(tl, 0.0),
                   tcos.get(tl, 0.0), tcos.get(tl, 0.0) - tmax, tmaxcol[tl],
                   float(bool(qwords & (words(c) | words(label)))), float(bool(qwords & words(t))),
                   float(pk), float(fk), st_max[i], math.log(n), st_lex[i], float(len(cflat) >= 5 and cflat in qflat),
                   co_use[i])
    pos = {name: k for k, name in enumerate(BASE_FEATURES)}
    crossed = [base[:, pos[a]] * base[:, pos[b]] for a, b in itertools.combinations(CROSSED, 2)]
    return np.concatenate([base, np.stack(crossed, 1), np.ones((n, 1), np.float32)], 1).astype(np.float32)
