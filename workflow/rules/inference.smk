# Rules of `inference` (placeholder until the layer lands).
