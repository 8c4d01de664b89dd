"""``xla.random``: random numbers from explicit keys (see ``xla.frontend.random``)."""
from xla.frontend.random import (PRNGKey, bernoulli, fold_in, key, normal, permutation,  # noqa: F401
                                 randint, split, uniform)
