"""Stage 5, from question to answer (`dbrouter ask`): SQL generation with voting and repair
(:mod:`~dbrouter.answer.generate`), the read-only guard (:mod:`~dbrouter.answer.guard`), the
runners that execute on a source (:mod:`~dbrouter.answer.runners`) and results
(:mod:`~dbrouter.answer.results`).
"""
