"""One BLAS thread for a question's numpy work.

numpy's OpenBLAS splits a product over every core and its threads then spin, waiting for more:
for a question's products (a vector against a few thousand document rows, a MiniLM pass over a
few tokens) that saves no time and burns CPU - a warm spider-route question cost ~240 ms of CPU
for ~125 ms of wall time, ~125 ms with one thread, the same wall time
(docs/decisions/adr-0020-fast-everywhere-issue-36-round-1-2026-11-27.md). On a server's two cores
that CPU is other clients' latency. The limit holds inside the block only, so a process that imported dbrouter keeps its own BLAS threads for its own work.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Generator

_controller = None
_lock = threading.Lock()
_pinned = False  # numpy's BLAS was started with one thread (assume_one_thread)


def assume_one_thread() -> None:
    """Tell :func:`one_blas_thread` that this process's BLAS already runs one thread.

    For a process that set ``OPENBLAS_NUM_THREADS=1`` before numpy was imported (the command
    line): the block then has nothing to limit and skips threadpoolctl's look through the loaded
    libraries (~20-35 ms of a one-question process's CPU).
    """
    global _pinned
    _pinned = True


@contextlib.contextmanager
def one_blas_thread() -> Generator[None]:
    """Run the block with numpy's BLAS on one thread (~15 us to enter and leave).

    The libraries are looked up once per process (threadpoolctl's controller), not per call,
    and not at all after :func:`assume_one_thread`.
    """
    global _controller
    if _pinned:
        yield
        return
    if _controller is None:
        with _lock:
            if _controller is None:
                from threadpoolctl import ThreadpoolController

                _controller = ThreadpoolController()
    with _controller.limit(limits=1, user_api="blas"):
        yield
