"""`dbrouter eval ...`: accuracy and speed measured on whole benchmark splits.

One module per subcommand - :mod:`~dbrouter.eval.route`, :mod:`~dbrouter.eval.build`,
:mod:`~dbrouter.eval.statements`, :mod:`~dbrouter.eval.examples`, :mod:`~dbrouter.eval.scale` -
each returning its measurements and a :class:`~dbrouter.eval.publish.Report`; shared parts:
:mod:`~dbrouter.eval.benchmark` (loading benchmark directories, the settings' splits),
:mod:`~dbrouter.eval.kb` (building an evaluation KB, latency) and :mod:`~dbrouter.eval.publish`
(printing a result and recording its block in BENCHMARKS.md with the command, date and machine).
"""
