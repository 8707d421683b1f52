# Rules of `alphatrim` (placeholder until the layer lands).
