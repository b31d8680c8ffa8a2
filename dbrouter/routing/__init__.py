"""Stage 3, routing from Python: :func:`~dbrouter.routing.route.route` over the KB's SQL route
functions, the typed evidence, the ranker's signals offline and the LLM phrase mapper.
"""
