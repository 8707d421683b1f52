# Rules of `pace` (placeholder until the layer lands).
