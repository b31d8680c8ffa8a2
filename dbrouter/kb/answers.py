"""The answers a held routing query gave, kept for a question asked again (adr-0038).

A dashboard refreshed every few minutes, an agent retrying a tool call and a team asking the same
question from several BI tools route the same text again and again. A held routing query
(:mod:`dbrouter.kb.held`) reads a read-only file through copies made once, under one access scope
per cursor, so for a given scope, entry point, ``k`` and question text its answer cannot change
while the holder lives: it is the same rows read by the same plan. :class:`Answers` keeps those
answers, least recently asked dropped first, bounded in count and in characters, so a question
asked again is answered without running the query. Only the holder that computed an answer
reads it back (a connection's, or ``dbrouter serve``'s generation of the file), and the scope is
part of the key: a restricted caller never gets an answer computed under another scope.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

from dbrouter import settings

MAX_ANSWERS = 1024
"""Answers kept per holder (a connection's held route, a ``dbrouter serve`` generation) unless
``DBROUTER_KEPT_ANSWERS`` says otherwise (0: none)."""

MAX_CHARS = 16 * 1024 * 1024
"""Characters (of questions and answers together) kept per holder, ~16 MB at most."""

MAX_ONE = 64 * 1024
"""The largest question plus answer kept, in characters: a ``route_query_json`` of a few hundred
candidates, or a question of a few pages, is answered again by the query."""

MISSING = object()
"""What :meth:`Answers.get` returns for an answer it does not hold."""


class Answers:
    """A bounded map from (scope, entry point, k, question) to an answer, least recently asked
    dropped first. Thread-safe: ``dbrouter serve``'s sessions share one.

    Args:
        count: at most this many answers (None: ``DBROUTER_KEPT_ANSWERS``, default :data:`MAX_ANSWERS`;
            0: none kept).
        chars: at most this many characters together (:data:`MAX_CHARS`).

    Raises:
        DbrouterError: ``DBROUTER_KEPT_ANSWERS`` is not a whole number.
    """

    def __init__(self, count: int | None = None, chars: int = MAX_CHARS) -> None:
        self._kept: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        if count is None:
            count = settings.count("DBROUTER_KEPT_ANSWERS")
        self._count, self._chars, self._size = count, chars, 0
        self._lock = threading.Lock()
        self.hits = 0
        """How many answers were given back."""

    def __len__(self) -> int:
        return len(self._kept)

    @staticmethod
    def key(scope: str | None, entry: str, k: int | None, question: str) -> tuple | None:
        """The key of one call, or None for one not kept (a question over :data:`MAX_ONE`).

        Args:
            scope: the caller's scope key (the scope variable's value as text; None: unset).
            entry: the entry point answered.
            k: its number of candidates (None for an entry without one).
            question: the question text, exactly as given.

        Returns:
            A hashable key, or None.
        """
        if len(question) > MAX_ONE:
            return None
        return scope, entry, k, question

    def get(self, key: tuple | None) -> Any:
        """The answer kept under ``key``, or :data:`MISSING`.

        Args:
            key: from :meth:`key` (None: nothing kept).

        Returns:
            The answer (made the most recently asked), or :data:`MISSING`.
        """
        if key is None:
            return MISSING
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                return MISSING
            self._kept.move_to_end(key)
            self.hits += 1
            return found[0]

    def put(self, key: tuple | None, answer: Any, chars: int) -> None:
        """Keep ``answer`` under ``key``, unless the two are too large (:data:`MAX_ONE`).

        Args:
            key: from :meth:`key` (None: nothing is kept).
            answer: the answer (not copied: the caller gives what it will not change).
            chars: the answer's size in characters (a str's length, a table's bytes).
        """
        size = chars + (len(key[-1]) if key is not None else 0)
        if key is None or size > MAX_ONE or self._count <= 0:
            return
        with self._lock:
            old = self._kept.pop(key, None)
            if old is not None:
                self._size -= old[1]
            self._kept[key] = (answer, size)
            self._size += size
            while self._kept and (len(self._kept) > self._count or self._size > self._chars):
                self._size -= self._kept.popitem(last=False)[1][1]
