"""``xla.lax``: control flow and XLA primitives for traced code (see
``xla.frontend.lax``)."""
from xla.frontend.lax import (broadcast_in_dim, broadcasted_iota, clamp, cond,  # noqa: F401
                              conv_general_dilated, convert_element_type, dot_general,
                              dynamic_index_in_dim, dynamic_slice, dynamic_update_index_in_dim,
                              dynamic_update_slice, fori_loop, iota, reduce, reduce_window,
                              reshape, rsqrt, logistic, erf, scan, select, sort, switch, top_k,
                              transpose, while_loop)
from xla.frontend.parallel import (all_gather, axis_index, pmax, pmean, pmin, ppermute,  # noqa: F401,E402
                                   psum, psum_scatter)
from xla.frontend.sharding import with_sharding_constraint  # noqa: F401,E402
