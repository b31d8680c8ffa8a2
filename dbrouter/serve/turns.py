"""Turns for a busy endpoint's statements: at most ``n`` run at once, the others wait their turn.

`dbrouter serve` takes a turn before it runs a session's statement
(:meth:`dbrouter.serve.knowledge.KnowledgeBase.query`): statements beyond the cores' worth only
share them, each runs slower and all finish later (16 clients of the demo KB on 2 cores: 0.7x the
throughput of 4).
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from collections.abc import Hashable
from dataclasses import dataclass, field


@dataclass
class _Waiter:
    """One statement waiting: its client and the event set when a turn is handed to it."""

    client: Hashable
    order: int
    handed: threading.Event = field(default_factory=threading.Event)


class Turns:
    """At most ``n`` holders at once; a turn given back goes to the waiting client that holds fewest.

    A semaphore lets a newcomer take a turn just given back ahead of those already waiting, so
    under load some statements waited many times longer than others (16 clients of the demo KB:
    p95 1.3 s against p50 0.43 s). Here a turn given back is handed to a waiter: of the waiting
    clients, the one that holds the fewest turns, then the one served longest ago, and of its
    statements the one that came first. One client alone is served first come first served; a
    client with many connections cannot keep another waiting for more than one statement's time,
    since the next turn given back is the other's.

    Args:
        n: turns (at least 1).
    """

    def __init__(self, n: int) -> None:
        self._lock = threading.Lock()
        self._free = max(int(n), 1)
        self._waiting: list[_Waiter] = []
        self._held: collections.Counter[Hashable] = collections.Counter()  # client -> turns it holds
        self._served: dict[Hashable, int] = {}  # client -> when it last got a turn (a count of turns)
        self._arrivals = itertools.count()
        self._turns = itertools.count()

    def take(self, timeout: float, cancelled: threading.Event | None = None, client: Hashable = None) -> float | None:
        """Wait for a turn, at most ``timeout`` seconds or until ``cancelled`` is set.

        Args:
            timeout: seconds to wait at most.
            cancelled: an event that ends the wait when set (checked every 50 ms).
            client: who asks (the session's client: its address, and its user under a policy); give
                the turn back with the same.

        Returns:
            The seconds waited, or None: no turn (timed out or cancelled; nothing to give back).
        """
        with self._lock:
            if self._free and not self._waiting:
                self._free -= 1
                self._held[client] += 1
                self._served[client] = next(self._turns)
                return 0.0
            mine = _Waiter(client, next(self._arrivals))
            self._waiting.append(mine)
        start = time.monotonic()
        while True:
            left = start + timeout - time.monotonic()
            if mine.handed.wait(max(min(left, 0.05), 0.0)):
                return time.monotonic() - start
            if left <= 0 or (cancelled is not None and cancelled.is_set()):
                with self._lock:
                    if mine.handed.is_set():  # handed over meanwhile: taken after all
                        return time.monotonic() - start
                    self._waiting.remove(mine)
                    self._forget_if_idle(client)
                return None

    def give_back(self, client: Hashable = None) -> None:
        """End a turn of ``client``: the next waiter (see the class) gets it, or it is free."""
        with self._lock:
            self._held[client] -= 1
            if self._held[client] <= 0:
                del self._held[client]
            self._forget_if_idle(client)
            if not self._waiting:
                self._free += 1
                return
            # several waiters of one client differ in order only, and the first of them wins
            nxt = min(self._waiting, key=lambda w: (self._held[w.client], self._served.get(w.client, -1), w.order))
            self._waiting.remove(nxt)
            self._held[nxt.client] += 1
            self._served[nxt.client] = next(self._turns)
            nxt.handed.set()

    def _forget_if_idle(self, client: Hashable) -> None:
        """Drop when ``client`` was last served once it holds no turn and waits for none (under the lock)."""
        if not self._held[client] and all(w.client != client for w in self._waiting):
            self._served.pop(client, None)

    def waiting(self) -> int:
        """Statements waiting for a turn now."""
        with self._lock:
            return len(self._waiting)
