# Rules of `syp` (placeholder until the layer lands).
