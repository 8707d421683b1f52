"""The `alphatrim` study: training variability measured with the robust (trimmed) KS test and
the alpha-trimming level (Banerjee et al., "Measuring training variability from stochastic
optimization using robust nonparametric testing"; docs/alphatrim.md).

``plan`` (what the workflow runs, at parse time), ``run`` (training the seed-regime zoos and
analysing them), ``report`` (Tables I-V, the checks table) and ``figures`` (Figs. 4-16), beside
the method modules ``kernel`` (reference CDF, closed-form trimmed KS distance, threshold gamma),
``bootstrap`` (Algorithm 1, the bootstrap alpha-trimming level alpha-hat) and ``metrics``
(logit gap, accuracy, churn, ECE, ensembles).
"""
