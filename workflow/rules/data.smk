# Rules of `data` (placeholder until the layer lands).
