"""The text UDFs, listed once: every engine's registration loops over :data:`TEXT_UDFS`.

Each row names the SQL function, its arguments and result in a small portable type notation
(``varchar``, ``integer``, ``T[]``, ``struct(name T, ...)``), and the handler: a pure function
that takes and returns plain Python values and answers SQL NULLs itself. The DuckDB plugin
(:mod:`python_udfs.plugin`) turns the types into DuckDB types and registers the handlers with
``null_handling="special"``; Snowflake (:mod:`python_udfs.snowflake_udfs`, the macro
``snowflake_udf_statements``) maps every list to ``array``. So both engines run the same code
on the same NULLs. The embedding UDFs (``embed``, ``embed_phrase``) are engine-specific (Arrow
batches on DuckDB, one embedder per handler on Snowflake) and live with their engine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from python_udfs.examples import describe_example as _describe_example
from python_udfs.examples import normalize_question as _normalize_question
from python_udfs.phrases import content_words as _content_words
from python_udfs.phrases import label_tokens as _label_tokens
from python_udfs.phrases import question_spans as _question_spans
from python_udfs.phrases import value_tokens as _value_tokens
from python_udfs.statements import schema_from_json
from python_udfs.statements import structure_statement as _structure_statement
from python_udfs.text import canonicalize as _canonicalize
from python_udfs.text import substrings as _substrings
from python_udfs.text import words


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
    """Normalised tokens of schema names (UDF ``dbrouter_label_tokens``; list elements may be NULL)."""
    return _label_tokens(*(None if n is None else str(n) for n in (names or [])))


def value_tokens(values: list[Any] | None) -> list[str]:
    """Normalised tokens of short sample values (UDF ``dbrouter_value_tokens``; list elements may be NULL)."""
    return _value_tokens(*(None if v is None else str(v) for v in (values or [])))


@dataclass(frozen=True)
class TextUdf:
    """One text UDF.

    Attributes:
        name: the SQL function name.
        args: ``(argument name, type)`` pairs in the portable notation.
        returns: the result type in the portable notation.
        handler: the pure function (takes SQL NULL as None).
    """

    name: str
    args: tuple[tuple[str, str], ...]
    returns: str
    handler: Callable[..., Any]


TEXT_UDFS: tuple[TextUdf, ...] = (
    TextUdf("dbrouter_canonicalize", (("text", "varchar"),), "varchar", canonicalize),
    TextUdf("dbrouter_substrings", (("text", "varchar"), ("min_words", "integer"), ("max_words", "integer")),
            "struct(text varchar, n_words integer)[]", substrings),
    TextUdf("dbrouter_structure_statement", (("statement", "varchar"), ("schema_json", "varchar")), "varchar",
            structure_statement),
    TextUdf("dbrouter_word_count", (("text", "varchar"),), "integer", word_count),
    TextUdf("dbrouter_describe_example", (("question", "varchar"), ("sql", "varchar"), ("schema_json", "varchar")),
            "varchar", describe_example),
    TextUdf("dbrouter_normalize_question", (("question", "varchar"),), "varchar", normalize_question),
    TextUdf("dbrouter_content_words", (("question", "varchar"),), "varchar[]", content_words),
    TextUdf("dbrouter_question_spans", (("question", "varchar"), ("max_words", "integer")),
            "struct(span varchar, words integer[])[]", question_spans),
    TextUdf("dbrouter_label_tokens", (("names", "varchar[]"),), "varchar[]", label_tokens),
    TextUdf("dbrouter_value_tokens", (("sample_values", "varchar[]"),), "varchar[]", value_tokens),
)
"""Every text UDF, in the order the engines register them."""


def snowflake_type(portable: str) -> str:
    """A portable type as Snowflake declares it: lists (and lists of structs) are ``array``."""
    return "array" if portable.endswith("[]") else portable
