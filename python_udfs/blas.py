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


@contextlib.contextmanager
def one_blas_thread() -> Generator[None]:
    """Run the block with numpy's BLAS on one thread (~15 us to enter and leave).

    The libraries are looked up once per process (threadpoolctl's controller), not per call.
    """
    global _controller
    if _controller is None:
        with _lock:
            if _controller is None:
                from threadpoolctl import ThreadpoolController

                _controller = ThreadpoolController()
    with _controller.limit(limits=1, user_api="blas"):
        yield
