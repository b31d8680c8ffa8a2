"""The `dbrouter` command line: :mod:`~dbrouter.cli.main` builds the parser from one module per
command group; the library does the work.

The command line runs numpy's BLAS on one thread unless ``OPENBLAS_NUM_THREADS`` says otherwise:
its products are a question's few rows (the MiniLM pass already asks for one thread), and
OpenBLAS starting a thread per core costs ~80 ms of CPU when numpy is imported - a sixth of a
one-question `dbrouter route`
(docs/decisions/adr-0020-fast-everywhere-issue-36-round-1-2026-11-27.md). Set before anything
imports numpy; when it is set here, the UDFs' per-call limit has nothing to do and is skipped.
"""

import os
import sys

if "OPENBLAS_NUM_THREADS" not in os.environ and "numpy" not in sys.modules:
    from python_udfs.blas import assume_one_thread

    assume_one_thread()  # nothing left for the UDFs to limit: skip threadpoolctl's library scan
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
