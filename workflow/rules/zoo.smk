# Rules of `zoo` (placeholder until the layer lands).
