# Rules of `laf` (placeholder until the layer lands).
