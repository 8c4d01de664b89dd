"""HLO modules over the sub-byte integer types (s2/u2/s4/u4, and s1/u1 that
jax cannot lower) and their arguments, shared by gen_sub_byte_ints.py (XLA's
results) and test_cpu_sub_byte_ints.py."""
import ml_dtypes
import numpy as np

XLA_TYPES = {"s2": ml_dtypes.int2, "u2": ml_dtypes.uint2, "s4": ml_dtypes.int4, "u4": ml_dtypes.uint4}
ALL_TYPES = dict(XLA_TYPES, s1=ml_dtypes.int1, u1=ml_dtypes.uint1)

BINARY = ["add", "subtract", "multiply", "divide", "remainder", "and", "or", "xor", "shift-left",
          "shift-right-arithmetic", "shift-right-logical", "maximum", "minimum"]
UNARY = ["negate", "not", "popcnt", "count-leading-zeros"]
SIGNED_UNARY = ["abs", "sign"]  # StableHLO refuses them on unsigned types
OTHERS = {"s1": "s2", "u1": "u2", "s2": "u4", "u2": "s4", "s4": "u2", "u4": "s2"}


def values(t):
    """Every value of type ``t``, as an array of its ml_dtypes type."""
    info = ml_dtypes.iinfo(ALL_TYPES[t])
    return np.arange(int(info.min), int(info.max) + 1).astype(ALL_TYPES[t])


def f32_sweep():
    base = np.array([0, -0.0, 0.5, -0.5, 0.99, -0.99, 1, -1, 1.5, -1.5, 2.5, -2.5, 3, -3, 3.99, -3.99,
                     7, -7, 7.5, -7.5, 8, -8, 8.5, -8.5, 15, 15.5, 16, 16.5, -9, 1e9, -1e9,
                     np.inf, -np.inf, np.nan, -np.nan], np.float32)
    return np.concatenate([base, np.linspace(-20, 20, 161, dtype=np.float32)])


def s32_sweep():
    return np.concatenate([np.arange(-40, 41), [127, 128, -129, 255, 256, 2**31 - 1, -2**31,
                                                 123456789, -123456789]]).astype(np.int32)


def module(t):
    """One module: every binary op over all pairs (x, y), every unary op,
    compare, select, clamp, a constant, converts to and from f32, s32 and
    another sub-byte type."""
    n = len(values(t))
    k = n * n
    nf, ni = len(f32_sweep()), len(s32_sweep())
    o = OTHERS[t]
    lines = [f"  x = {t}[{k}] parameter(0)", f"  y = {t}[{k}] parameter(1)",
             f"  f = f32[{nf}] parameter(2)", f"  i = s32[{ni}] parameter(3)"]
    results = []

    def add(name, shape, expr):
        lines.append(f"  {name} = {shape} {expr}")
        results.append((name, shape))

    for op in BINARY:
        add(op.replace("-", "_"), f"{t}[{k}]", f"{op}(x, y)")
    for op in UNARY + (SIGNED_UNARY if t.startswith("s") else []):
        add(op.replace("-", "_"), f"{t}[{k}]", f"{op}(x)")
    add("lt", f"pred[{k}]", "compare(x, y), direction=LT")
    add("ge", f"pred[{k}]", "compare(x, y), direction=GE")
    lines.append(f"  c = {t}[{k}] constant({{{', '.join(str(int(v)) for v in np.resize(values(t), k))}}})")
    add("with_constant", f"{t}[{k}]", "add(x, c)")
    add("sel", f"{t}[{k}]", "select(lt, x, y)")
    lines.append(f"  lo = {t}[] constant({int(values(t)[0]) + (1 if n > 2 else 0)})")
    lines.append(f"  hi = {t}[] constant({int(values(t)[-1])})")
    add("clamped", f"{t}[{k}]", "clamp(lo, x, hi)")
    add("from_f32", f"{t}[{nf}]", "convert(f)")
    add("from_s32", f"{t}[{ni}]", "convert(i)")
    add("to_f32", f"f32[{k}]", "convert(x)")
    add("to_s32", f"s32[{k}]", "convert(x)")
    add("to_u8", f"u8[{k}]", "convert(x)")
    add("to_other", f"{o}[{k}]", "convert(x)")
    add("to_pred", f"pred[{k}]", "convert(x)")
    shapes = ", ".join(s for _, s in results)
    lines.append(f"  ROOT out = ({shapes}) tuple({', '.join(nm for nm, _ in results)})")
    return "HloModule sub_byte_" + t + "\n\nENTRY main {\n" + "\n".join(lines) + "\n}\n", [nm for nm, _ in results]


def arguments(t):
    v = values(t)
    x = np.repeat(v, len(v))
    y = np.tile(v, len(v))
    return x, y, f32_sweep(), s32_sweep()
