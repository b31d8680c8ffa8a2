"""`dbrouter eval ...`: accuracy and speed measured on whole benchmark splits.

One module per subcommand (the table :data:`dbrouter.cli.eval.EVALS` lists them):
:mod:`~dbrouter.eval.route`, :mod:`~dbrouter.eval.build`, :mod:`~dbrouter.eval.statements`,
:mod:`~dbrouter.eval.examples`, :mod:`~dbrouter.eval.scale`, :mod:`~dbrouter.eval.link`,
:mod:`~dbrouter.eval.sql`, :mod:`~dbrouter.eval.abstain`, :mod:`~dbrouter.eval.serve`,
:mod:`~dbrouter.eval.firstrun`, each returning its measurements and a
:class:`~dbrouter.eval.publish.Report`. Shared parts: :mod:`~dbrouter.eval.benchmark` (loading
benchmark directories, the settings' splits), :mod:`~dbrouter.eval.kb` (building an evaluation KB
through the atomic build, latency), :mod:`~dbrouter.eval.publish` (printing a result and recording
its block in BENCHMARKS.md with the command, date and machine), :mod:`~dbrouter.eval.gold` (the
tables and columns of a gold SQL) and :mod:`~dbrouter.eval.dumps` (the benchmark's SQL dumps as
databases). Two measurements run as modules: ``python -m dbrouter.eval.few_examples`` and
``python -m dbrouter.eval.latency``.
"""
