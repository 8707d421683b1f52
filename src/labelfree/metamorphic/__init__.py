"""Study `metamorphic`: unreliable inferences found by object-relevancy metamorphic relations.

Tian et al., "To What Extent Do DNN-based Image Classification Models Make Unreliable
Inferences?", EMSE 2021; docs/metamorphic.md. Modules: :mod:`.plan` (what a configuration runs,
at parse time), :mod:`.run` (test sets and verdicts, what the workflow scripts call),
:mod:`.report` (tables, figures, checks), and the method modules :mod:`.regions` (target-object
regions), :mod:`.followups` (MR-1 / MR-2 follow-up inputs), :mod:`.oracle` (oracles, voting,
verdicts), :mod:`.analysis` (RQ quantities) and :mod:`.originals` (fills at original resolution).
"""
