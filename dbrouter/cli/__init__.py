"""The `dbrouter` command line: :mod:`~dbrouter.cli.main` builds the parser from one module per
command group; the library does the work.

The command line runs numpy's BLAS on one thread unless ``OPENBLAS_NUM_THREADS`` says otherwise:
its products are a question's few rows (the MiniLM pass already asks for one thread), and
OpenBLAS starting a thread per core costs ~80 ms of CPU when numpy is imported - a sixth of a
one-question `dbrouter route` (BENCHMARKS.md, "Fast start"). Set before anything imports numpy.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
