"""Running one read-only SELECT on a database of the knowledge base, used by linking, answer,
serve, the CLI and eval (:mod:`~dbrouter.execute.runners`: its target, the guard of
:mod:`dbrouter.query`, then its source type's ``run``).
"""
