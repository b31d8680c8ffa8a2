"""The endpoint's turns (dbrouter.serve.turns.Turns): at most n statements run at once, the
others wait first come first served, within a timeout, and a cancel ends a wait."""

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
        _until(lambda n=i + 1: len(turns._waiting) == n)
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


def test_the_default_is_per_core():
    assert default_max_running() >= RUNNING_PER_CORE and default_max_running() % RUNNING_PER_CORE == 0


def _until(condition, seconds: float = 10.0) -> None:
    """Wait until ``condition()`` holds (a busy machine schedules threads late), or fail."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        time.sleep(0.005)
