"""Routing from Python: :func:`~dbrouter.routing.route.route`, the one routing call of every client,
over the KB's SQL route functions; the typed evidence, the ranker's run-time side and the LLM
phrase mapper.
"""
