# Rules of `shifts` (placeholder until the layer lands).
