"""The element types XLA has beyond the classic ones (s1/u1, the ml_dtypes
minifloats) in text: names as XLA prints them, constants that round-trip bit
for bit, and XLA's own printed constants (jax 0.10.2, ``jax.jit(lambda:
jnp.asarray(v)).lower().as_text(dialect='hlo')``) read back to XLA's codes."""
import ml_dtypes
import numpy as np
import pytest

from xla.hlo.parser import parse_hlo_module
from xla.hlo.printer import format_float
from xla.hlo.shape import Shape
from xla.hlo.types import PrimitiveType as PT, from_dtype, from_text

NEW_TYPES = {
    "s1": ml_dtypes.int1, "u1": ml_dtypes.uint1,
    "f8e4m3": ml_dtypes.float8_e4m3, "f8e3m4": ml_dtypes.float8_e3m4,
    "f8e4m3fnuz": ml_dtypes.float8_e4m3fnuz, "f8e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "f8e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz, "f8e8m0fnu": ml_dtypes.float8_e8m0fnu,
    "f4e2m1fn": ml_dtypes.float4_e2m1fn, "f6e3m2fn": ml_dtypes.float6_e3m2fn,
    "f6e2m3fn": ml_dtypes.float6_e2m3fn,
}
OLD_NARROW = {"s2": ml_dtypes.int2, "u2": ml_dtypes.uint2, "s4": ml_dtypes.int4, "u4": ml_dtypes.uint4,
              "f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2}


@pytest.mark.parametrize("name", list(NEW_TYPES))
def test_names_and_dtypes(name):
    et = from_text(name)
    assert et is not None and et.text == name and str(et) == name
    assert et.dtype == np.dtype(NEW_TYPES[name]) and from_dtype(NEW_TYPES[name]) is et
    info = (ml_dtypes.finfo if et.is_float else ml_dtypes.iinfo)(NEW_TYPES[name])
    assert et.bits == info.bits
    text = f"HloModule m\n\nENTRY e {{\n  ROOT p = {name}[2,3]{{0,1}} parameter(0)\n}}\n"
    assert parse_hlo_module(text).to_text() == text


def _all_values(dt):
    if np.dtype(dt) in [np.dtype(t) for t in (ml_dtypes.int1, ml_dtypes.uint1, ml_dtypes.int2,
                                               ml_dtypes.uint2, ml_dtypes.int4, ml_dtypes.uint4)]:
        info = ml_dtypes.iinfo(dt)
        return np.arange(int(info.min), int(info.max) + 1).astype(dt)
    return np.arange(1 << ml_dtypes.finfo(dt).bits, dtype=np.uint8).view(dt)


@pytest.mark.parametrize("name", list(NEW_TYPES) + list(OLD_NARROW))
def test_every_value_round_trips_through_text(name):
    dt = dict(NEW_TYPES, **OLD_NARROW)[name]
    et = from_text(name)
    vals = _all_values(dt)
    body = ", ".join(format_float(v, et) if et.is_float else str(int(v)) for v in vals)
    text = (f"HloModule m, entry_computation_layout={{()->{name}[{len(vals)}]{{0}}}}\n\n"
            f"ENTRY %e () -> {name}[{len(vals)}] {{\n"
            f"  ROOT %c = {name}[{len(vals)}]{{0}} constant({{{body}}})\n}}\n\n")
    module = parse_hlo_module(text)
    assert module.to_text() == text
    got = np.asarray(module.entry.root_instruction.literal)
    assert got.dtype == np.dtype(dt)
    if et.is_float:  # NaN payloads are not kept (nan(0x..) prints as nan)
        nan = np.isnan(vals.astype(np.float32))
        np.testing.assert_array_equal(got.view(np.uint8)[~nan], vals.view(np.uint8)[~nan])
        assert np.isnan(got.astype(np.float32)[nan]).all()
    else:
        np.testing.assert_array_equal(got.view(np.uint8), vals.view(np.uint8))


# XLA's printed constants (jax 0.10.2) and the codes they were printed from.
XLA_CONSTANTS = [
    ("f8e8m0fnu[8]{0} constant({5.9e-39, 1.2e-38, 2.4e-38, 7.5e-09, 1, 9.4e+21, 1.7e+38, nan})",
     [0, 1, 2, 100, 127, 200, 254, 255]),
    ("f8e4m3fnuz[5]{0} constant({0, 0.000977, -nan, 240, -240})", [0, 1, 0x80, 0x7F, 0xFF]),
    ("f8e4m3[2]{0} constant({inf, nan})", [0x78, 0x7C]),
    ("f4e2m1fn[4]{0} constant({0, -0, 0.5, -6})", [0, 8, 1, 15]),
    ("f8e3m4[3]{0} constant({0.0156, 15.5, inf})", [1, 0x6F, 0x70]),
    ("f8e8m0fnu[] constant(2)", [128]),
    ("f8e4m3b11fnuz[2]{0} constant({1.5, 2})", list(np.array([1.5, 2], ml_dtypes.float8_e4m3b11fnuz)
                                                   .view(np.uint8))),
]


@pytest.mark.parametrize("line, codes", XLA_CONSTANTS, ids=[c[0].split("[")[0] for c in XLA_CONSTANTS])
def test_xla_printed_constants_read_back_to_xla_codes(line, codes):
    text = f"HloModule m\n\nENTRY e {{\n  ROOT c = {line}\n}}\n"
    module = parse_hlo_module(text)
    got = np.asarray(module.entry.root_instruction.literal).reshape(-1).view(np.uint8)
    assert got.tolist() == codes
    assert f"ROOT c = {line}" in module.to_text()


def test_sub_byte_byte_size_is_one_element_per_byte_unless_packed():
    from xla.hlo.shape import Layout
    s4 = Shape(PT.S4, (8,), Layout((0,)))
    assert s4.byte_size() == 8
    packed = Shape(PT.S4, (8,), Layout((0,), "E(4)"))
    assert packed.layout.element_size_in_bits == 4 and packed.byte_size() == 4
    assert Shape(PT.F4E2M1FN, (3,)).byte_size() == 3
    assert Shape(PT.U1, (9,), Layout((0,), "E(1)")).byte_size() == 2
    assert Layout((0,), "T(128)").element_size_in_bits == 0
