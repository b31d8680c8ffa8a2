"""The endpoint's turns (dbrouter.serve.turns.Turns): at most n statements run at once, the
others wait (first come first served within a client, a turn given back to the client holding
fewest), within a timeout, and a cancel ends a wait."""

from __future__ import annotations

import threading
import time

from dbrouter.serve import RUNNING_PER_CORE, default_max_running
from dbrouter.serve.turns import Turns


def test_free_turns_are_taken_without_waiting_then_a_wait_times_out():
    turns = Turns(2)
    assert turns.take(1.0) == 0.0 and turns.take(1.0) == 0.0
    start = time.monotonic()
    assert turns.take(0.2) is None  # both taken: no turn within 0.2 s
    assert 0.15 < time.monotonic() - start < 2.0
    turns.give_back()
    assert turns.take(0.2) == 0.0  # the one given back is free again (nobody waited)


def test_a_turn_given_back_goes_to_the_longest_waiter():
    turns = Turns(1)
    assert turns.take(1.0) == 0.0
    order: list[int] = []

    def wait(i: int) -> None:
        if turns.take(10.0) is not None:
            order.append(i)
            time.sleep(0.02)
            turns.give_back()

    threads = []
    for i in range(5):  # they queue in this order: each starts once the one before it waits
        threads.append(threading.Thread(target=wait, args=(i,)))
        threads[-1].start()
        _until(lambda n=i + 1: turns.waiting() == n)
    # a newcomer that finds a turn given back must not pass those waiting
    turns.give_back()
    assert turns.take(0.0) is None  # the turn went to waiter 0, not to this call
    for t in threads:
        t.join(10)
    assert order == [0, 1, 2, 3, 4]
    assert turns.take(0.1) == 0.0  # the last one gave it back: free


def test_a_cancel_ends_the_wait_and_leaves_the_queue():
    turns = Turns(1)
    assert turns.take(1.0) == 0.0
    cancelled = threading.Event()
    result: list = []
    waiter = threading.Thread(target=lambda: result.append(turns.take(30.0, cancelled)))
    waiter.start()
    time.sleep(0.1)
    cancelled.set()
    waiter.join(5)
    assert result == [None] and not waiter.is_alive()
    turns.give_back()
    assert turns.take(0.1) == 0.0  # nobody left waiting: the turn was free, not handed to the cancelled one


class _Queue:
    """Waiters on one Turns, started one after another; each records when it got its turn and
    holds it until the test gives it back."""

    def __init__(self, turns: Turns) -> None:
        self.turns = turns
        self.order: list[str] = []
        self.threads: list[threading.Thread] = []

    def wait(self, name: str, client: str) -> None:
        """Start a waiter of ``client`` and return once it is in the queue."""
        before = self.turns.waiting()

        def run() -> None:
            if self.turns.take(30.0, client=client) is not None:
                self.order.append(name)

        self.threads.append(threading.Thread(target=run))
        self.threads[-1].start()
        _until(lambda: self.turns.waiting() == before + 1)

    def hand_over(self, client: str) -> str:
        """Give back a turn of ``client``; returns the waiter that got it."""
        served = len(self.order)
        self.turns.give_back(client)
        _until(lambda: len(self.order) == served + 1)
        return self.order[-1]


def test_a_turn_given_back_goes_to_the_client_holding_fewest():
    # one turn: a client with three statements waiting cannot keep another's one waiting
    turns = Turns(1)
    assert turns.take(1.0, client="busy") == 0.0
    queue = _Queue(turns)
    for name in ("a1", "a2", "a3"):
        queue.wait(name, "busy")
    queue.wait("b1", "other")
    assert queue.hand_over("busy") == "b1"  # both hold none: "other" was never served
    assert [queue.hand_over("other"), queue.hand_over("busy"), queue.hand_over("busy")] == ["a1", "a2", "a3"]
    turns.give_back("busy")
    assert turns.take(0.1, client="other") == 0.0 and turns.waiting() == 0

    # two turns, both the busy client's: the other client's statements alternate with its
    turns = Turns(2)
    assert turns.take(1.0, client="busy") == 0.0 and turns.take(1.0, client="busy") == 0.0
    queue = _Queue(turns)
    for name in ("a1", "a2", "a3", "a4"):
        queue.wait(name, "busy")
    queue.wait("b1", "other")
    queue.wait("b2", "other")
    assert queue.hand_over("busy") == "b1"  # busy holds 1, other 0
    assert queue.hand_over("busy") == "a1"  # busy 0, other 1
    assert queue.hand_over("other") == "b2"  # busy 1, other 0
    assert queue.hand_over("busy") == "a2"  # busy 0, other 1
    assert [queue.hand_over("other"), queue.hand_over("busy")] == ["a3", "a4"]
    for t in queue.threads:
        t.join(5)
    turns.give_back("busy")
    turns.give_back("busy")
    assert turns.take(0.1) == 0.0 and turns.take(0.1) == 0.0 and turns.take(0.05) is None


def test_the_default_is_per_core():
    assert default_max_running() >= RUNNING_PER_CORE and default_max_running() % RUNNING_PER_CORE == 0


def _until(condition, seconds: float = 10.0) -> None:
    """Wait until ``condition()`` holds (a busy machine schedules threads late), or fail."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        time.sleep(0.005)
