"""The shifts layer: -C corruption suites, released -C archives and natural-shift sets.

Entry points (docs/shifts.md): :func:`labelfree.shifts.suite.corruption_sets` and
:func:`~labelfree.shifts.suite.natural_sets` (the test sets a dataset gets),
:func:`labelfree.shifts.corruptions.corrupt`, :func:`labelfree.shifts.natural.natural_shift`,
:func:`labelfree.shifts.released.load_released`. The workflow reads
:mod:`labelfree.shifts.released` at parse time; it imports neither scipy nor PIL.
"""
