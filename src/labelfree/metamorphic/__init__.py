"""Study `metamorphic`: unreliable inferences found by object-relevancy metamorphic relations.

Tian et al., EMSE 2021 (../shared/specs/metamorphic.md). Modules:

- :mod:`~labelfree.metamorphic.regions`    target-object regions from boxes or masks (spec 2.1)
- :mod:`~labelfree.metamorphic.followups`  MR-1 / MR-2 follow-up inputs, 3 or 15 colours (2.2)
- :mod:`~labelfree.metamorphic.oracle`     oracles, voting, verdicts (2.3-2.5)
- :mod:`~labelfree.metamorphic.analysis`   RQ quantities, oracle precision, recall (5, 7)
- :mod:`~labelfree.metamorphic.experiment` tables, figures and checks A-F of the workflow (7.4)
"""
