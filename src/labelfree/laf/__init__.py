"""The `laf` study: LaF, labeling-free model selection (Hu et al., ACM TOSEM 33(1), 2023), its
baselines and the paper's experiments; docs/laf.md.

``plan`` (what the workflow runs, at parse time), ``run`` (every method on the inference
artefacts), ``report`` (tables, figures, checks table); the method modules ``core`` (LaF,
paper section 3.3, Algorithm 1), ``baselines`` (Random, SDS, CES, CRC, paper section 4.4),
``metrics`` (Spearman, Kendall tau-b, Jaccard top-k, paper section 4.5) and ``paper`` (the
paper's printed values, shown beside ours).
"""
