# Rules of `report` (placeholder until the layer lands).
