"""Interpreter handlers: rng-bit-generator, rng, rng-get-and-update-state.

rng-bit-generator follows XLA's RngBitGeneratorExpander (the expansion
XLA:CPU and XLA:GPU compile), so the bits match what XLA:CPU produces:

* the state is u64[]: state[0] is the key, the rest the counter;
  rng_default is Philox on CPU (the expander is built with RNG_PHILOX);
* Threefry-2x32-20 (Salmon et al., "Parallel random numbers: as easy as
  1, 2, 3", SC'11; the rounds JAX's threefry2x32 uses): key = (lo, hi)
  32-bit halves of state[0]. 64-bit outputs: element i (row-major) uses
  counter state[1] + i split as (lo, hi) and is word0 | word1 << 32.
  32-bit outputs: the shape is split in halves along its first even
  dimension s (if none, its largest, first such; a scalar counts as
  [1]): the half shape has ceil(d_s/2) there, counters are state[1] plus
  the row-major index in the half shape, and element with coordinate c
  along s is word (c % 2) of the counter at coordinate c // 2. The new
  counter is state[1] plus the number of counters used;
* Philox-4x32-10: key = (lo, hi) of state[0]; the 128-bit counter is
  (low, high) = (state[1], state[2]) for a u64[3] state and
  (state[1], state[0]) for a u64[2] state (the expander reverses it),
  plus i, as four 32-bit words, least significant first. 32-bit outputs
  use ceil(n/4) counters, output 4*i + j being word j of counter i;
  64-bit outputs ceil(n/2) counters, two u64 per counter (words 0,1 then
  2,3, low word first). The new counter is the old one plus the number of
  counters used; a u64[2] state keeps only its low word.

Narrower element types take the low bits of the 32-bit words; signed and
float types are bitcasts of the unsigned bits.

rng (rng_uniform / rng_normal) is nondeterministic in XLA; here it draws
from a NumPy generator seeded with 0 per Evaluator (kept on the ctx), so
runs are reproducible. rng-get-and-update-state keeps a 128-bit counter
per Evaluator starting at 0, returns it as u64[2] and adds ``delta``.
"""
import numpy as np

from xla.hlo.evaluator.registry import register
from xla.errors import UnimplementedError

_MASK32 = np.uint64(0xFFFFFFFF)


def _u32(x):
    return np.asarray(x, dtype=np.uint32)


def _rotl32(x, r):
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def threefry2x32(key, x):
    """Threefry-2x32 with 20 rounds. key: (k0, k1) u32; x: (x0, x1) u32 arrays."""
    with np.errstate(over="ignore"):
        k0, k1 = _u32(key[0]), _u32(key[1])
        ks = [k0, k1, k0 ^ k1 ^ np.uint32(0x1BD11BDA)]
        x0 = _u32(x[0]) + ks[0]
        x1 = _u32(x[1]) + ks[1]
        rotations = ((13, 15, 26, 6), (17, 29, 16, 24))
        for i in range(5):
            for r in rotations[i % 2]:
                x0 = x0 + x1
                x1 = _rotl32(x1, r)
                x1 = x0 ^ x1
            x0 = x0 + ks[(i + 1) % 3]
            x1 = x1 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x0, x1


def _mulhilo32(a, b):
    prod = np.asarray(a, np.uint64) * np.uint64(b)
    return (prod >> np.uint64(32)).astype(np.uint32), (prod & _MASK32).astype(np.uint32)


def philox4x32(key, x, rounds=10):
    """Philox-4x32 with 10 rounds. key: (k0, k1) u32; x: four u32 arrays."""
    with np.errstate(over="ignore"):
        k0, k1 = _u32(key[0]), _u32(key[1])
        x0, x1, x2, x3 = (_u32(v) for v in x)
        for r in range(rounds):
            if r:
                k0 = k0 + np.uint32(0x9E3779B9)
                k1 = k1 + np.uint32(0xBB67AE85)
            hi0, lo0 = _mulhilo32(x0, 0xD2511F53)
            hi1, lo1 = _mulhilo32(x2, 0xCD9E8D57)
            x0, x1, x2, x3 = hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0
    return x0, x1, x2, x3


def _split64(v):
    v = np.asarray(v, np.uint64)
    return (v & _MASK32).astype(np.uint32), (v >> np.uint64(32)).astype(np.uint32)


def _join64(lo, hi):
    return np.asarray(lo, np.uint64) | (np.asarray(hi, np.uint64) << np.uint64(32))


def _bits_to_type(bits32_or_64, shape):
    """Reinterprets generated unsigned bits as the element type of ``shape``."""
    dtype = shape.dtype
    width = shape.element_type.bits
    bits = np.asarray(bits32_or_64)
    if width == 64:
        return bits.astype(np.uint64).view(dtype).reshape(shape.dimensions)
    utype = {8: np.uint8, 16: np.uint16, 32: np.uint32}.get(width)
    if utype is None:
        raise UnimplementedError(f"rng-bit-generator of {shape.element_type} on the interpreter")
    return bits.astype(utype).view(dtype).reshape(shape.dimensions)


def _threefry32_bits(key, counter, dims):
    """32-bit Threefry bits for shape ``dims`` (split-in-halves layout); returns (bits, counters used)."""
    dims = tuple(dims) or (1,)
    split = next((i for i, d in enumerate(dims) if d % 2 == 0), None)
    if split is None:
        split = max(range(len(dims)), key=lambda i: (dims[i], -i))
    half = list(dims)
    half[split] = (dims[split] + 1) // 2
    counters = int(np.prod(half, dtype=np.int64))
    ctr = counter + np.arange(counters, dtype=np.uint64)
    y0, y1 = threefry2x32(key, _split64(ctr))
    # (.., h, 2, ..) merged into (.., 2h, ..), then trimmed to d.
    words = np.stack([y0.reshape(half), y1.reshape(half)], axis=split + 1)
    merged = list(dims)
    merged[split] = 2 * half[split]
    bits = words.reshape(merged)
    bits = np.take(bits, np.arange(dims[split]), axis=split)
    return bits.reshape(-1), counters


def rng_bit_generator(algorithm, state, out_shape):
    """Returns (new_state, bits) for a u64 state array and an output shape."""
    state = np.asarray(state, np.uint64).reshape(-1)
    if algorithm in (None, "rng_default"):
        algorithm = "rng_philox"
    n = int(np.prod(out_shape.dimensions, dtype=np.int64))
    wide = out_shape.element_type.bits == 64
    key = _split64(state[0])
    new_state = state.copy()
    with np.errstate(over="ignore"):
        if algorithm == "rng_three_fry":
            if wide:
                counters = n
                ctr = state[1] + np.arange(counters, dtype=np.uint64)
                y0, y1 = threefry2x32(key, _split64(ctr))
                bits = _join64(y0, y1)
            else:
                bits, counters = _threefry32_bits(key, state[1], out_shape.dimensions)
            new_state[1] = state[1] + np.uint64(counters)
        elif algorithm == "rng_philox":
            counters = (n + 1) // 2 if wide else (n + 3) // 4
            lo = state[1]
            hi = state[2] if state.size > 2 else state[0]
            iota = np.arange(counters, dtype=np.uint64)
            c_lo = lo + iota
            c_hi = hi + (c_lo < lo).astype(np.uint64)
            w = philox4x32(key, _split64(c_lo) + _split64(c_hi))
            if wide:
                bits = np.stack([_join64(w[0], w[1]), _join64(w[2], w[3])], axis=-1).reshape(-1)[:n]
            else:
                bits = np.stack(w, axis=-1).reshape(-1)[:n]
            new_lo = lo + np.uint64(counters)
            new_state[1] = new_lo
            if state.size > 2:
                new_state[2] = hi + np.uint64(1 if new_lo < lo else 0)
        else:
            raise UnimplementedError(f"rng-bit-generator algorithm {algorithm} on the interpreter")
    return new_state, _bits_to_type(bits, out_shape)


@register("rng-bit-generator")
def rng_bit_generator_handler(instr, operands, ctx):
    (state,) = operands
    state_shape, out_shape = instr.shape.tuple_shapes
    new_state, bits = rng_bit_generator(instr.attr("algorithm", "rng_default"), state, out_shape)
    return new_state.astype(state_shape.dtype).reshape(state_shape.dimensions), bits


def _generator(ctx):
    gen = getattr(ctx, "_interpreter_rng", None)
    if gen is None:
        gen = np.random.default_rng(0)
        try:
            ctx._interpreter_rng = gen
        except AttributeError:
            pass
    return gen


@register("rng")
def rng(instr, operands, ctx):
    """rng_uniform: [a, b) (integers: a..b-1); rng_normal: mean a, stddev b."""
    a, b = operands
    dist = instr.attr("distribution", "rng_uniform")
    shape = instr.shape
    dtype = shape.dtype
    gen = _generator(ctx)
    if dist == "rng_uniform":
        if np.dtype(dtype).kind in "iu":
            lo, hi = int(a), int(b)
            out = gen.integers(lo, max(hi, lo + 1), size=shape.dimensions, dtype=np.int64)
        elif np.dtype(dtype) == np.bool_:
            out = gen.integers(0, 2, size=shape.dimensions) != 0
        else:
            lo, hi = float(a), float(b)
            out = np.asarray(lo + (hi - lo) * gen.random(size=shape.dimensions)).astype(dtype)
            # Rounding to the element type may reach b; keep the interval half-open.
            out = np.where(out >= np.asarray(b, dtype), np.asarray(a, dtype), out) if hi > lo else out
    elif dist == "rng_normal":
        out = float(a) + float(b) * gen.standard_normal(size=shape.dimensions)
    else:
        raise UnimplementedError(f"rng distribution {dist} on the interpreter")
    return np.asarray(out).astype(dtype)


@register("rng-get-and-update-state")
def rng_get_and_update_state(instr, operands, ctx):
    delta = instr.attr("delta", 0)
    delta = int(getattr(delta, "text", delta))
    state = getattr(ctx, "_interpreter_rng_state", 0)
    try:
        ctx._interpreter_rng_state = (state + delta) % (1 << 128)
    except AttributeError:
        pass
    value = np.array([state & ((1 << 64) - 1), state >> 64], dtype=np.uint64)
    return value.astype(instr.shape.dtype).reshape(instr.shape.dimensions)
