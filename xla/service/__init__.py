"""Target-independent passes over HLO modules and the pass pipeline."""
