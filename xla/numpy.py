"""NumPy's names for what NumPy's dispatch protocols cannot reach inside a
trace (``xla.numpy.array([t0, t1])``, creation functions); everything else
is plain ``numpy`` on traced values. See ``xla.frontend.numpy_api``."""
from xla.frontend.numpy_api import *  # noqa: F401,F403
from xla.frontend.numpy_api import array, asarray  # noqa: F401
