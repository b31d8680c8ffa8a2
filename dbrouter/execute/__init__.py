"""Between routing and linking: running one read-only SELECT on a source, used by linking, answer,
serve, the CLI and eval. The read-only guard (:mod:`~dbrouter.execute.guard`), the runners that
execute on each source type (:mod:`~dbrouter.execute.runners`) and the results they return
(:mod:`~dbrouter.execute.results`).
"""
