"""A compiler for linear algebra in the spirit of XLA."""
