"""What dbrouter fits, on benchmark TRAIN splits only: one module per fitted model, each run as
``python -m dbrouter.tune.<module>`` and each writing one generated file marked do-not-edit.

* :mod:`~dbrouter.tune.ranker` - the re-rank's learned ranker and abstention threshold
  (``macros/tuned/fitted_ranker.sql``, the defaults of ``dbrouter__ranker_weights`` and
  ``dbrouter__abstain_below``);
* :mod:`~dbrouter.tune.linker` - the LLM-free schema linker (``dbrouter/linking/weights.py``);
* :mod:`~dbrouter.tune.route_weights`, :mod:`~dbrouter.tune.rerank_params` - the grid searches
  behind the first ranking's weights and the re-rank's phrase threshold (they print; the values
  stand in dbt_project.yml, BENCHMARKS.md records the runs).
"""
