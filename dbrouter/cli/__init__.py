"""The `dbrouter` command line: :mod:`~dbrouter.cli.main` builds the parser from one module per
command group; the library does the work.
"""
