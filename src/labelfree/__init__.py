"""labelfree: label-free and label-efficient evaluation of DNN model zoos.

Five studies share one pipeline (data -> shifts -> zoo -> inference -> study):
``laf`` (rank models without labels), ``pace`` (estimate accuracy from few labels),
``syp`` (predict accuracy on a shifted set), ``alphatrim`` (training variability by the
robust KS test) and ``metamorphic`` (unreliable inferences by metamorphic relations).
The library never imports Snakemake; ``workflow/`` is a thin layer over it.
"""

__version__ = "0.1.0"
