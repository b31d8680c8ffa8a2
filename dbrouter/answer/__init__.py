"""From question to answer (`dbrouter ask`): SQL generation with voting and repair
(:mod:`~dbrouter.answer.generate`), verification and the `ask` flow; the SQL runs through
:mod:`dbrouter.execute`.
"""
