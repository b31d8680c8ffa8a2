"""What a query on a source may be and what it returns, below the source types that run it: the
read-only guard (:mod:`~dbrouter.query.guard`) and the results with their bounded collection
(:mod:`~dbrouter.query.results`). Imports nothing of dbrouter but its errors.
"""
