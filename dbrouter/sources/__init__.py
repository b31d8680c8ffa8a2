"""Sources: the databases to route among, one module per source type behind
:class:`dbrouter.sources.base.SourceType` (parse the sources file, read a snapshot, fingerprint the
schema, say where SQL runs and run it), listed once in :mod:`dbrouter.sources.registry`.
"""
