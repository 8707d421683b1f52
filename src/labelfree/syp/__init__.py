"""SYP: scoring your prediction on unseen data (Chen, Zhang, Song, CVPRW 2023; docs/syp.md).

``plan`` says what the study runs for a config (parse time); ``run`` computes over artefacts
(test sets, indicator tables, oracle training); ``report`` writes Tables 1-5, the figures and the
checks table. Method modules: ``indicators`` (the six per-sample indicators), ``normalise``,
``oracle`` (ORA-A, ORA-B and their training), ``aggregate`` (set accuracy, RMSE, threshold),
``baselines`` (the dataset-level baselines), ``metasets`` (meta-sets and validation sets).
"""
