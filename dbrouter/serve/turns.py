"""Turns for a busy endpoint's statements: at most ``n`` run at once, the others wait in order.

`dbrouter serve` takes a turn before it runs a session's statement
(:meth:`dbrouter.serve.knowledge.KnowledgeBase.query`): statements beyond the cores' worth only
share them, each runs slower and all finish later (16 clients of the demo KB on 2 cores: 0.7x the
throughput of 4).
"""

from __future__ import annotations

import collections
import threading
import time


class Turns:
    """At most ``n`` holders at once; the others wait, served in the order they came.

    A semaphore lets a newcomer take a turn just given back ahead of those already waiting, so
    under load some statements waited many times longer than others (16 clients of the demo KB:
    p95 1.3 s against p50 0.43 s). Here a turn given back goes to the longest waiter.

    Args:
        n: turns (at least 1).
    """

    def __init__(self, n: int) -> None:
        self._lock = threading.Lock()
        self._free = max(int(n), 1)
        self._waiting: collections.deque[threading.Event] = collections.deque()

    def take(self, timeout: float, cancelled: threading.Event | None = None) -> float | None:
        """Wait for a turn, at most ``timeout`` seconds or until ``cancelled`` is set.

        Args:
            timeout: seconds to wait at most.
            cancelled: an event that ends the wait when set (checked every 50 ms).

        Returns:
            The seconds waited, or None: no turn (timed out or cancelled; nothing to give back).
        """
        with self._lock:
            if self._free and not self._waiting:
                self._free -= 1
                return 0.0
            mine = threading.Event()
            self._waiting.append(mine)
        start = time.monotonic()
        while True:
            left = start + timeout - time.monotonic()
            if mine.wait(max(min(left, 0.05), 0.0)):
                return time.monotonic() - start
            if left <= 0 or (cancelled is not None and cancelled.is_set()):
                with self._lock:
                    if mine.is_set():  # handed over meanwhile: taken after all
                        return time.monotonic() - start
                    self._waiting.remove(mine)
                return None

    def give_back(self) -> None:
        """End a turn: the longest waiter gets it, or it is free."""
        with self._lock:
            if self._waiting:
                self._waiting.popleft().set()
            else:
                self._free += 1
