"""PACE: practical accuracy estimation from a few labelled inputs (Chen et al., TOSEM 2020;
docs/pace.md).

``core.select(features, n)`` picks the inputs to label and ``core.fit`` caches the clustering and
orders so that every budget is served by prefixes; ``process``, ``fast_hdbscan``, ``allocate``,
``mmd`` and ``art`` are its stages; ``baselines`` holds SRS, CES, CSS and the RQ5 variants,
``surprise`` LSA and CSS-COV, ``metrics`` the estimator, error, improvement and statistics,
``inputs`` the mutated, generated and rotated input pools. The study: ``plan`` (what the
workflow runs for a config), ``run`` (subjects and experiments over artefacts), ``report``
(tables, figures, checks).
"""
