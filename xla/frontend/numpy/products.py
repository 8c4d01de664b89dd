"""Matrix and vector products: ``np.matmul``, ``np.dot``, ``np.tensordot``,
``np.einsum``... each one HLO ``dot`` (``dot_general``: contracting and
batch dimensions) per pair of operands, plus ``np.kron`` and ``np.cross``
from elementwise products."""
import builtins

import numpy as np

from xla.errors import ShapeError
from xla.frontend import lax, tracing
from xla.frontend.numpy._common import check_no_out, implements, normalize_axis
from xla.frontend.numpy.indexing_routines import diagonal, pad
from xla.frontend.numpy.manipulation import moveaxis, ravel, reshape, stack, transpose
from xla.frontend.numpy.reductions import sum
from xla.frontend.tracing import (as_tracer, broadcast_arrays, broadcast_to, convert,
                                  result_type, tracing_error)


# ----- matrix and vector products ---------------------------------------------------------

def dot_general(lhs, rhs, contracting, batch=((), ()), preferred=None):
    """HLO dot with dimension numbers; operands converted to their common dtype."""
    dt = result_type(lhs, rhs)
    lhs, rhs = convert(as_tracer(lhs), dt), convert(as_tracer(rhs), dt)
    if dt.kind == "b":
        # NumPy's boolean matmul is "any(a and b)": compute in int32, compare.
        li, ri = convert(lhs, np.int32), convert(rhs, np.int32)
        return convert(lax.dot_general(li, ri, (contracting, batch)), np.bool_)
    return lax.dot_general(lhs, rhs, (contracting, batch), preferred_element_type=preferred)


@implements(np.matmul)
def matmul(x1, x2, /, out=None, **kwargs):
    check_no_out("matmul", out)
    a, b = as_tracer(x1), as_tracer(x2)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError("matmul: Input operand does not have enough dimensions (a scalar)")
    squeeze_a = a.ndim == 1
    squeeze_b = b.ndim == 1
    if squeeze_a:
        a = reshape(a, (1, a.shape[0]))
    if squeeze_b:
        b = reshape(b, (b.shape[0], 1))
    if a.shape[-1] != b.shape[-2]:
        raise ShapeError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, with "
                         f"gufunc signature (n?,k),(k,m?)->(n?,m?) (size {b.shape[-2]} is different "
                         f"from {a.shape[-1]}) for shapes {tuple(x1.shape if hasattr(x1, 'shape') else ())} "
                         f"and {tuple(x2.shape if hasattr(x2, 'shape') else ())}")
    batch = broadcast_shapes_(a.shape[:-2], b.shape[:-2])
    a = broadcast_to(a, batch + a.shape[-2:])
    b = broadcast_to(b, batch + b.shape[-2:])
    nb = len(batch)
    out_ = dot_general(a, b, ((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))))
    if squeeze_a and squeeze_b:
        return reshape(out_, batch)
    if squeeze_a:
        return reshape(out_, batch + (out_.shape[-1],))
    if squeeze_b:
        return reshape(out_, batch + (out_.shape[-2],))
    return out_


def broadcast_shapes_(*shapes):
    return tracing.broadcast_shapes(*shapes)


@implements(np.dot)
def dot(a, b, out=None):
    check_no_out("dot", out)
    a, b = as_tracer(a), as_tracer(b)
    if a.ndim == 0 or b.ndim == 0:
        return np.multiply(a, b)
    if b.ndim <= 2:
        return matmul(a, b)
    # N-d: sum over a's last axis and b's second-to-last.
    if a.shape[-1] != b.shape[-2]:
        raise ShapeError(f"shapes {a.shape} and {b.shape} not aligned: {a.shape[-1]} (dim "
                         f"{a.ndim - 1}) != {b.shape[-2]} (dim {b.ndim - 2})")
    out_ = dot_general(a, b, ((a.ndim - 1,), (b.ndim - 2,)))
    return out_


@implements(np.vdot)
def vdot(a, b):
    a = ravel(as_tracer(a))
    b = ravel(as_tracer(b))
    return dot(np.conjugate(a), b)


@implements(np.inner)
def inner(a, b):
    a, b = as_tracer(a), as_tracer(b)
    if a.ndim == 0 or b.ndim == 0:
        return np.multiply(a, b)
    return dot_general(a, b, ((a.ndim - 1,), (b.ndim - 1,)))


@implements(np.outer)
def outer(a, b, out=None):
    check_no_out("outer", out)
    a, b = ravel(as_tracer(a)), ravel(as_tracer(b))
    return np.multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


def vecdot(x1, x2, /, *, axis=-1):
    """``np.vecdot`` (a gufunc, reached through ``ufuncs.dispatch``)."""
    a, b = broadcast_arrays(as_tracer(x1), as_tracer(x2))
    products = np.multiply(np.conjugate(a) if a.dtype.kind == "c" else a, b)
    # The gufunc's loop type: int32 stays int32 (np.sum would widen it).
    return sum(products, axis=axis, dtype=products.dtype)


@implements(np.tensordot)
def tensordot(a, b, axes=2):
    a, b = as_tracer(a), as_tracer(b)
    if isinstance(axes, (int, np.integer)):
        ax_a = list(range(a.ndim - axes, a.ndim))
        ax_b = list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [normalize_axis(x, a.ndim) for x in np.atleast_1d(ax_a)]
        ax_b = [normalize_axis(x, b.ndim) for x in np.atleast_1d(ax_b)]
    return dot_general(a, b, (tuple(ax_a), tuple(ax_b)))


@implements(np.kron)
def kron(a, b):
    a, b = as_tracer(a), as_tracer(b)
    nd = builtins.max(a.ndim, b.ndim)
    a = reshape(a, (1,) * (nd - a.ndim) + a.shape)
    b = reshape(b, (1,) * (nd - b.ndim) + b.shape)
    ea = reshape(a, tuple(x for d in a.shape for x in (d, 1)))
    eb = reshape(b, tuple(x for d in b.shape for x in (1, d)))
    return reshape(np.multiply(ea, eb), tuple(x * y for x, y in zip(a.shape, b.shape)))


@implements(np.cross)
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    a, b = as_tracer(a), as_tracer(b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a = moveaxis(a, axisa, -1)
    b = moveaxis(b, axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("incompatible dimensions for cross product (dimension must be 2 or 3)")
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    if a.shape[-1] == 2:
        a = pad(a, [(0, 0)] * (a.ndim - 1) + [(0, 1)])
    if b.shape[-1] == 2:
        b = pad(b, [(0, 0)] * (b.ndim - 1) + [(0, 1)])
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    c = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return moveaxis(c, -1, axisc)


# ----- einsum -----------------------------------------------------------------------------

@implements(np.einsum)
def einsum(*operands, out=None, optimize=False, dtype=None, **kwargs):
    """Lowered to one dot_general per pair of operands (left to right),
    with diagonals taken and lone indices summed first."""
    check_no_out("einsum", out)
    if not operands or not isinstance(operands[0], str):
        raise tracing_error("np.einsum under xla.jit needs the subscripts string form")
    spec, arrays = operands[0].replace(" ", ""), [as_tracer(a) for a in operands[1:]]
    if "->" in spec:
        inputs, output = spec.split("->")
    else:
        inputs, output = spec, None
    in_specs = inputs.split(",")
    if len(in_specs) != len(arrays):
        raise ValueError("more operands provided to einstein sum function than specified in the "
                         "subscripts string" if len(arrays) > len(in_specs) else
                         "fewer operands provided to einstein sum function than specified")
    # Expand "..." into fresh upper-case letters.
    ell_rank = 0
    for s, a in zip(in_specs, arrays):
        if "..." in s:
            ell_rank = builtins.max(ell_rank, a.ndim - (len(s) - 3))
    ell = "".join(chr(ord("A") + i) for i in range(ell_rank))
    specs = []
    for s, a in zip(in_specs, arrays):
        if "..." in s:
            k = a.ndim - (len(s) - 3)
            s = s.replace("...", ell[ell_rank - k:])
        if len(s) != a.ndim:
            raise ValueError(f"einstein sum subscripts string {s!r} does not match operand "
                             f"dimension {a.ndim}")
        specs.append(s)
    if output is None:
        counts = {}
        for s in specs:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        output = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        output = output.replace("...", ell)
    sizes = {}
    for s, a in zip(specs, arrays):
        for c, d in zip(s, a.shape):
            if sizes.setdefault(c, d) != d and d != 1 and sizes[c] != 1:
                raise ShapeError(f"operands could not be broadcast together in einsum: index "
                                 f"{c!r} has sizes {sizes[c]} and {d}")
            if sizes[c] == 1:
                sizes[c] = d
    dt = np.dtype(dtype) if dtype is not None else result_type(*arrays)
    ops = []
    for s, a in zip(specs, arrays):
        a = convert(a, dt)
        a, s = _einsum_diagonal(a, s)
        ops.append((a, s))

    def needed_later(k, c):
        return c in output or builtins.any(c in s for _, s in ops[k + 1:])

    # Sum indices that appear in one operand only and not in the output.
    acc, acc_s = ops[0]
    acc, acc_s = _einsum_sum_lone(acc, acc_s, lambda c: needed_later(0, c))
    for k in range(1, len(ops)):
        b_, b_s = ops[k]
        b_, b_s = _einsum_sum_lone(b_, b_s, lambda c: c in acc_s or needed_later(k, c))
        acc, acc_s = _einsum_pair(acc, acc_s, b_, b_s, lambda c: needed_later(k, c))
    acc, acc_s = _einsum_sum_lone(acc, acc_s, lambda c: c in output)
    perm = [acc_s.index(c) for c in output]
    result = transpose(acc, perm)
    target = tuple(sizes[c] for c in output)
    return broadcast_to(result, target) if result.shape != target else result


def _einsum_diagonal(a, s):
    """Repeated letters in one operand take the diagonal."""
    while len(set(s)) != len(s):
        for c in s:
            if s.count(c) > 1:
                i = s.index(c)
                j = s.index(c, i + 1)
                a = diagonal(a, 0, i, j)          # moves the diagonal to the end
                s = "".join(ch for k, ch in enumerate(s) if k not in (i, j)) + c
                break
    return a, s


def _einsum_sum_lone(a, s, keep):
    drop = [i for i, c in enumerate(s) if not keep(c)]
    if not drop:
        return a, s
    return sum(a, axis=tuple(drop)), "".join(c for i, c in enumerate(s) if i not in drop)


def _einsum_pair(a, a_s, b, b_s, keep):
    common = [c for c in a_s if c in b_s]
    batch = [c for c in common if keep(c)]
    contract = [c for c in common if not keep(c)]
    # Size-1 broadcasting of a shared index: broadcast both first.
    for c in common:
        da, db = a.shape[a_s.index(c)], b.shape[b_s.index(c)]
        if da != db:
            n = builtins.max(da, db)
            if da == 1:
                a = broadcast_to(a, tuple(n if ch == c else d for ch, d in zip(a_s, a.shape)))
            else:
                b = broadcast_to(b, tuple(n if ch == c else d for ch, d in zip(b_s, b.shape)))
    out = dot_general(a, b, (tuple(a_s.index(c) for c in contract), tuple(b_s.index(c) for c in contract)),
                      (tuple(a_s.index(c) for c in batch), tuple(b_s.index(c) for c in batch)))
    out_s = "".join(batch) + "".join(c for c in a_s if c not in common) + \
        "".join(c for c in b_s if c not in common)
    return out, out_s
