# Rules of `metamorphic` (placeholder until the layer lands).
