"""Content phrases of a question and lexical tokens of schema labels (for the routing re-rank).

The re-rank maps each *content word* of a question (a word that is not a stop word, an
SQL-ish word such as "how many", "list", "average", "different", or a bare number) to columns
of a candidate database. Multi-word phrases ("first name", "home team") are matched as
*spans*: every run of up to ``max_words`` consecutive content words; a content word counts as
mapped when any span containing it maps to a column.

Words are lower-cased and crudely singularised (``singers`` -> ``singer``, ``cities`` ->
``city``) so that lexical matches against column and table names work in both directions.
"""

from __future__ import annotations

import re
from functools import lru_cache

# Stop words, question words and SQL-ish words of the phrase-mapping method's exclusion list
# (SQL keywords, functions, "number of"/"how many"/"list all", general modifiers, stop words).
STOP_WORDS = frozenset(["a", "an", "the", "of", "in", "on", "at", "for", "to", "by", "with", "from", "into", "onto", "about", "as", "and", "or", "but", "not", "no", "nor", "is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "done", "have", "has", "had", "having", "that", "this", "these", "those", "there", "here", "their", "its", "it", "they", "them", "he", "she", "his", "her", "him", "we", "our", "you", "your", "i", "me", "my", "us", "what", "which", "who", "whom", "whose", "where", "when", "why", "how", "many", "much", "list", "show", "give", "find", "return", "get", "tell", "display", "provide", "report", "all", "each", "every", "any", "some", "both", "either", "neither", "other", "others", "another", "same", "such", "only", "also", "just", "than", "then", "too", "very", "number", "numbers", "count", "counts", "total", "average", "avg", "sum", "maximum", "minimum", "max", "min", "mean", "highest", "lowest", "largest", "smallest", "biggest", "greatest", "most", "least", "more", "less", "fewer", "greater", "larger", "smaller", "bigger", "longer", "shorter", "higher", "lower", "different", "distinct", "unique", "various", "respective", "corresponding", "order", "ordered", "sort", "sorted", "ascending", "descending", "alphabetical", "alphabetically", "between", "whether", "if", "so", "can", "could", "would", "should", "will", "shall", "may", "might", "must", "please", "let", "know"])

_TOKEN = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"([a-z])([A-Z])")
MAX_VALUE_WORDS = 3  # longer sample values are free text (comments, notes): their words name nothing
MAX_CONTENT_WORDS = 40  # a 100 kB question must stay cheap: only its first 40 content words count


def normalize_word(word: str) -> str:
    """Lower-case and crudely singularise one word.

    Args:
        word: a token.

    Returns:
        The normalised token (``cities`` -> ``city``, ``matches`` -> ``match``, ``singers`` -> ``singer``).
    """
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and re.search(r"(ss|x|ch|sh)es$", w):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def content_words(question: str | None) -> list[str]:
    """The question's content words, normalised, in order.

    Args:
        question: natural-language question (None gives []).

    Returns:
        Normalised content words (at most ``MAX_CONTENT_WORDS``).
    """
    if not question:
        return []
    out: list[str] = []
    for tok in _TOKEN.findall(str(question).lower()):
        if tok in STOP_WORDS or tok.isdigit() or len(tok) < 2:
            continue
        out.append(normalize_word(tok))
        if len(out) >= MAX_CONTENT_WORDS:
            break
    return out


def question_spans(question: str | None, max_words: int = 3) -> list[tuple[str, list[int]]]:
    """Runs of up to ``max_words`` consecutive content words.

    Args:
        question: natural-language question.
        max_words: longest span (>= 1).

    Returns:
        (span text, indices of the content words it covers) pairs, without duplicate texts.
    """
    words = content_words(question)
    seen: dict[str, list[int]] = {}
    for i in range(len(words)):
        for n in range(1, max(1, int(max_words)) + 1):
            if i + n <= len(words):
                text = " ".join(words[i:i + n])
                if text in seen:
                    seen[text] = sorted(set(seen[text]) | set(range(i, i + n)))
                else:
                    seen[text] = list(range(i, i + n))
    return list(seen.items())


def label_tokens(*names: str | None) -> list[str]:
    """Normalised tokens of schema names/labels (``firstName``, ``first_name`` -> first, name).

    Args:
        names: table/column names and labels (None ignored).

    Returns:
        Sorted distinct normalised tokens.
    """
    toks: set[str] = set()
    for name in names:
        if name:
            toks |= _name_tokens(str(name))
    return sorted(toks)


@lru_cache(maxsize=1 << 16)
def _name_tokens(name: str) -> frozenset[str]:
    """One name's normalised tokens, remembered: a KB's names repeat (a table's name on each of its
    columns, ``id`` and ``name`` everywhere), and a build asks for 1.5 million of them at 10,000
    databases (kb_column_phrases)."""
    return frozenset(normalize_word(tok) for tok in _TOKEN.findall(_CAMEL.sub(r"\1 \2", name).lower()))


def value_tokens(*values: str | None) -> list[str]:
    """Normalised tokens of the short sample values of a column (what a question may quote).

    A value of more than ``MAX_VALUE_WORDS`` words is free text (a comment, a description): a word
    inside it says nothing about the column, so it gives no token.

    Args:
        values: sample values (None ignored).

    Returns:
        Sorted distinct normalised tokens of the values of at most ``MAX_VALUE_WORDS`` words.
    """
    short = [v for v in values if v and len(_TOKEN.findall(str(v).lower())) <= MAX_VALUE_WORDS]
    return label_tokens(*short)
