"""Text helpers behind statement retrieval: constant canonicalisation and question sub-strings."""

from __future__ import annotations

import re

NUMBER_PLACEHOLDER = "100"
DATE_PLACEHOLDER = "1000-10-10"
MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december|"
          "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_DATE_PATTERNS = [
    re.compile(r"\b\d{4}[-/.]\d{1,2}(?:[-/.]\d{1,2})?(?:[ T]\d{1,2}:\d{2}(?::\d{2})?)?\b"),
    re.compile(r"\b\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}\b"),
    # month name with a day and/or year: "September 2013", "March 3, 1999", "3rd of May 2001"
    re.compile(rf"\b(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?)?(?:{MONTHS})\.?"
               rf"(?:\s+\d{{1,2}}(?:st|nd|rd|th)?,?)?(?:\s+\d{{4}})\b", re.IGNORECASE),
    re.compile(rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{MONTHS})\b", re.IGNORECASE),
    re.compile(rf"\b(?:{MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)\b", re.IGNORECASE),
]
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:[.,]\d+)*(?:st|nd|rd|th|%)?(?![\w])")
_WORD = re.compile(r"[\w'’%-]+|[^\w\s]", re.UNICODE)


def canonicalize(text: str | None) -> str | None:
    """Replace dates by ``1000-10-10`` and other numbers by ``100``, so that statements and
    questions that differ only in constants match ("September 2013" ~ "March 1999").

    Args:
        text: any text (None passes through).

    Returns:
        The text with constants replaced and white space folded.
    """
    if text is None:
        return None
    out = text
    for pattern in _DATE_PATTERNS:
        out = pattern.sub(DATE_PLACEHOLDER, out)
    parts = re.split(rf"({re.escape(DATE_PLACEHOLDER)})", out)
    out = "".join(p if p == DATE_PLACEHOLDER else _NUMBER.sub(NUMBER_PLACEHOLDER, p) for p in parts)
    return " ".join(out.split())


def words(text: str | None) -> list[str]:
    """Split into words, dropping punctuation-only tokens."""
    if not text:
        return []
    return [w for w in _WORD.findall(text) if re.search(r"\w", w)]


def substrings(text: str | None, min_words: int, max_words: int, limit: int = 400) -> list[tuple[str, int]]:
    """Contiguous word sub-strings of ``text`` with a word length in [min_words, max_words].

    Args:
        text: the (canonicalised) question.
        min_words: shortest sub-string (at least 1).
        max_words: longest sub-string (capped at the number of words).
        limit: stop after this many sub-strings (a 100 kB question must stay cheap).

    Returns:
        (sub-string, word count) pairs, shortest first, without duplicates.
    """
    toks = words(text)
    lo, hi = max(1, int(min_words)), min(len(toks), int(max_words))
    seen: set[str] = set()
    out: list[tuple[str, int]] = []
    for n in range(lo, hi + 1):
        for i in range(0, len(toks) - n + 1):
            s = " ".join(toks[i:i + n])
            if s.lower() not in seen:
                seen.add(s.lower())
                out.append((s, n))
                if len(out) >= limit:
                    return out
    return out
