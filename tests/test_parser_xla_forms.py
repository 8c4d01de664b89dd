"""Text forms XLA's parser accepts beyond what XLA prints by default (issue 14):
compact get-tuple-element operands (``p0#1``, what ``--xla_dump_compact_gte``
writes), buffer shapes (``b(f32[4,16])``) and ``?`` in convolution
dim_labels. Each form: parse, print (a fixed point), verify, run, and every
malformed variant a located error.
"""
import numpy as np
import pytest

from xla.errors import HloParseError
from xla.hlo.evaluator import evaluate
from xla.hlo.parser import parse_hlo_module
from xla.hlo.verifier import verify_module


def parse_error(text):
    with pytest.raises(HloParseError) as info:
        parse_hlo_module(text, filename="bad.hlo")
    return str(info.value)


# ----- compact get-tuple-element ---------------------------------------------------

COMPACT = """HloModule m
ENTRY e {
  p0 = (f32[3], (s32[], f32[3])) parameter(0)
  n = f32[3] negate(p0#0)
  ROOT r = f32[3] add(p0#0, p0#1#1)
}
"""
# The same module written out: what XLA's parser builds from COMPACT (a
# get-tuple-element per tuple and index, named <tuple>_<index>, before its
# first user, shared by every use).
EXPANDED = """HloModule m

ENTRY e {
  p0 = (f32[3], (s32[], f32[3])) parameter(0)
  p0_0 = f32[3] get-tuple-element(p0), index=0
  n = f32[3] negate(p0_0)
  p0_1 = (s32[], f32[3]) get-tuple-element(p0), index=1
  p0_1_1 = f32[3] get-tuple-element(p0_1), index=1
  ROOT r = f32[3] add(p0_0, p0_1_1)
}
"""


def test_compact_get_tuple_element_is_a_get_tuple_element():
    m = parse_hlo_module(COMPACT)
    verify_module(m)
    assert m.to_text() == EXPANDED
    assert parse_hlo_module(m.to_text()).to_text() == EXPANDED
    x, y = np.array([1, 2, 3], np.float32), np.array([10, 20, 30], np.float32)
    out = evaluate(m, (x, (np.int32(7), y)))
    np.testing.assert_array_equal(out, x + y)


def test_compact_get_tuple_element_with_operand_shapes_forward_and_inferred():
    m = parse_hlo_module("""HloModule m
ENTRY %e {
  %p = f32[2] parameter(0)
  %t = tuple(%p, %p)
  ROOT %r = add(f32[2] %t#1, f32[2] %later#0)
  %later = (f32[2]) tuple(%p)
}""")
    verify_module(m)
    names = [i.name for i in m.entry.instructions]
    assert names.index("t_1") < names.index("r") and names.index("later_0") < names.index("r")
    assert m.entry.root_instruction.shape.to_text(False) == "f32[2]"
    assert m.entry.instruction("t_1").shape.to_text(False) == "f32[2]"


def test_compact_get_tuple_element_names_never_clash():
    # A name the text gives is kept; the get-tuple-element takes another.
    m = parse_hlo_module("""HloModule m
ENTRY e {
  p0 = (f32[2], f32[2]) parameter(0)
  p0_0 = f32[2] negate(p0#0)
  ROOT r = f32[2] add(p0_0, p0#0)
}""")
    verify_module(m)
    gte = m.entry.instruction("p0_0").operands[0]
    assert gte.opcode == "get-tuple-element" and gte.name == "p0_0.1"
    assert m.entry.root_instruction.operands[1] is gte
    # ... and in another computation too.
    m = parse_hlo_module("""HloModule m
body {
  p0 = (f32[2], f32[2]) parameter(0)
  ROOT r = (f32[2], f32[2]) tuple(p0#1, p0#0)
}
cond {
  p0 = (f32[2], f32[2]) parameter(0)
  ROOT f = pred[] constant(false)
}
ENTRY e {
  p0_1 = (f32[2], f32[2]) parameter(0)
  w = (f32[2], f32[2]) while(p0_1), condition=cond, body=body
  ROOT r = f32[2] add(w#0, w#1)
}""")
    verify_module(m)
    names = [i.name for c in m.computations for i in c.instructions]
    assert len(names) == len(set(names)) and "p0_1" in [i.name for i in m.entry.instructions]
    a, b = np.float32([1, 2]), np.float32([3, 4])
    np.testing.assert_array_equal(evaluate(m, (a, b)), a + b)


@pytest.mark.parametrize("operands, message, offset", [
    ("p#0, p#0", "'p#0' takes a tuple element but 'p' has shape f32[2], not a tuple", 2),
    ("t#2, t#0", "tuple index 2 is out of range: 't' has shape (f32[2], f32[2]) with 2 elements",
     2),
    ("t#0#0, t#0", "'t#0#0' takes a tuple element but 't#0' has shape f32[2], not a tuple", 4),
    ("t#-1, t#0", "a tuple index after '#' must be non-negative, got -1", 2),
    ("t#, t#0", "expected a tuple index after '#' but found ','", 2),
    ("t#x, t#0", "expected a tuple index after '#' but found 'x'", 2),
    ("t#0 t#0", "expected ',' or ')' after an operand but found 't'", 4),
    ("q#0, t#0", "unknown instruction '%q' used as operand", 0),
    ("u#5, t#0", "cannot infer the result shape of get-tuple-element: get-tuple-element index 5 "
     "is out of range", 2),
], ids=["not a tuple", "out of range", "nested not a tuple", "negative", "no index",
        "not a number", "no comma", "unknown", "inferred out of range"])
def test_malformed_compact_get_tuple_element(operands, message, offset):
    text = ("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  t = (f32[2], f32[2]) tuple(p, p)\n"
            f"  u = tuple(p, p)\n  ROOT a = add({operands})\n}}\n")
    # (The operands start in column 16.)
    assert f"bad.hlo:6:{16 + offset}: error: {message}" in parse_error(text)


# ----- buffer shapes --------------------------------------------------------------

BUFFERS = """HloModule m, entry_computation_layout={(b(f32[4,16]{1,0}), f32[2]{0})->(b(f32[4,16]{1,0}), f32[2]{0})}

ENTRY %e (p0: b(f32[4,16]), p1: f32[2]) -> (b(f32[4,16]), f32[2]) {
  %p0 = b(f32[4,16]{1,0}) parameter(0)
  %p1 = f32[2]{0} parameter(1)
  %pin = b(f32[2]{0}) custom-call(f32[2]{0} %p1), custom_call_target="Pin"
  %unpin = f32[2]{0} custom-call(b(f32[2]{0}) %pin), custom_call_target="Unpin"
  ROOT %t = (b(f32[4,16]{1,0}), f32[2]{0}) tuple(b(f32[4,16]{1,0}) %p0, f32[2]{0} %unpin)
}

"""


def test_buffer_shapes_parse_print_and_verify():
    from xla.hlo.parser import parse_shape
    from xla.hlo.shape import Shape
    from xla.hlo.types import PrimitiveType
    m = parse_hlo_module(BUFFERS)
    verify_module(m)
    assert m.to_text() == BUFFERS   # as XLA prints it
    p0 = m.entry.parameter(0)
    assert p0.shape.is_buffer and not p0.shape.is_array and not p0.shape.is_tuple
    assert p0.shape.buffer_shape == Shape.array(PrimitiveType.F32, (4, 16))
    assert p0.shape.byte_size() == 4 * 16 * 4
    assert m.entry.root_instruction.shape.has_buffer
    assert parse_shape("b(f32[<=8]{0})").to_text() == "b(f32[<=8]{0})"
    assert parse_shape("b( f32[2] )").to_text(False) == "b(f32[2])"
    # A result shape left out is inferred through tuples of buffers.
    m = parse_hlo_module("HloModule m\nENTRY e {\n  p = b(s8[3]) parameter(0)\n"
                         "  t = tuple(p, p)\n  ROOT g = get-tuple-element(t), index=1\n}")
    assert m.entry.root_instruction.shape.to_text() == "b(s8[3])"


@pytest.mark.parametrize("platform", ["interpreter", "cpu"])
def test_backends_refuse_buffer_shapes_by_name(platform):
    import xla
    from xla.errors import UnimplementedError
    m = parse_hlo_module(BUFFERS)
    with pytest.raises(UnimplementedError, match=r"does not support buffer shapes \(parameter "
                                                 r"p0: b\(f32\[4,16\]\)\)"):
        xla.compile(m, platform)


@pytest.mark.parametrize("shape, message, column", [
    ("b()", "expected a shape but found ')'", 15),
    ("b((f32[2], f32[2]))", "a buffer shape holds an array shape, not (f32[2], f32[2])", 15),
    ("b(token[])", "a buffer shape holds an array shape, not token[]", 15),
    ("b(b(f32[2]))", "a buffer shape holds an array shape, not b(f32[2])", 15),
    ("b(f32[2]", "expected ')' at the end of a buffer shape but found 'parameter'", 22),
    ("b(f32[2],", "expected ')' at the end of a buffer shape but found ','", 21),
    ("buffer[2]", "unknown element type 'buffer'", 13),
    ("b(f33[2])", "unknown element type 'f33'", 15),
], ids=["empty", "tuple", "token", "buffer", "unclosed", "comma", "buffer type", "bad type"])
def test_malformed_buffer_shapes(shape, message, column):
    text = f"HloModule m\nENTRY e {{\n  ROOT p0 = {shape} parameter(0)\n}}\n"
    assert f"bad.hlo:3:{column}: error: {message}" in parse_error(text)



# ----- '?' in convolution dim_labels -------------------------------------------------

def conv_module(labels, lhs="f32[1,5,2]", out="f32[1,5,3]"):
    return ("HloModule m\nENTRY e {\n  x = " + lhs + " parameter(0)\n  w = f32[3,2,3] parameter(1)\n"
            "  ROOT c = " + out + " convolution(x, w), window={size=3 pad=1_1}, dim_labels="
            + labels + "\n}\n")


@pytest.mark.parametrize("labels, printed", [
    # As XLA prints them (checked with jaxlib 0.10.2's parser and printer):
    # each part up to its highest named dimension, so a trailing '?' goes.
    ("b0?f_0io->b0f", "b0?f_0io->b0f"),
    ("?b0f_0io->b0f", "?b0f_0io->b0f"),
    ("b0f_0?io->b0f", "b0f_0?io->b0f"),
    ("b0f_0io->b0?f", "b0f_0io->b0?f"),
    ("b0f?_0io?->b0f?", "b0f_0io->b0f"),
])
def test_question_marks_in_dim_labels_parse_and_print_as_in_xla(labels, printed):
    m = parse_hlo_module(conv_module(labels))
    assert f"dim_labels={printed}\n" in m.to_text()
    assert parse_hlo_module(m.to_text()).to_text() == m.to_text()


def test_trailing_question_marks_name_the_same_convolution():
    m = parse_hlo_module(conv_module("b0f?_0io?->b0f?"))
    plain = parse_hlo_module(conv_module("b0f_0io->b0f"))
    verify_module(m)
    assert m.entry.root_instruction.attrs["dim_labels"] == plain.entry.root_instruction.attrs["dim_labels"]
    x = np.arange(10, dtype=np.float32).reshape(1, 5, 2)
    w = np.arange(18, dtype=np.float32).reshape(3, 2, 3) / 7
    np.testing.assert_array_equal(evaluate(m, x, w), evaluate(plain, x, w))


def test_an_operand_dimension_left_unnamed_is_refused_by_the_verifier():
    # XLA's shape inference wants rank = spatial dimensions + 2, so a '?'
    # inside the labels of a used operand never verifies.
    from xla.errors import VerifierError
    m = parse_hlo_module(conv_module("b0?f_0io->b0f", lhs="f32[1,5,1,2]"))
    with pytest.raises(VerifierError, match="convolution with 1 spatial dimensions needs rank-3 "
                                            "operands"):
        verify_module(m)


def test_labels_past_the_operand_rank_are_a_verifier_error():
    # 'f' at position 3 of a rank-3 operand (found by mutating these modules:
    # an IndexError in shape inference).
    from xla.errors import VerifierError
    m = parse_hlo_module(conv_module("b0?f_0io->b0f"))
    with pytest.raises(VerifierError, match=r"the input dimensions of dim_labels b0\?f_0io->b0f are "
                                            r"not each of 0..2 once"):
        verify_module(m)


@pytest.mark.parametrize("labels, message, column", [
    ("b??f_0io->b0f", "bad dim_labels 'b??f_0io->b0f': dim_labels 'b??f_0io->b0f': operands "
     "disagree on the number of spatial dimensions", 78),
    ("b00f_0io->b0f", "bad dim_labels 'b00f_0io->b0f': spatial dimension 0 appears twice in "
     "dim_labels part 'b00f'", 78),
    ("b0f_0io->?", "bad dim_labels 'b0f_0io->?': dim_labels part '?' is too short", 78),
    ("b0f ?_0io->b0f", "expected '->' in dim_labels but found '?'", 82),
    ("b0f_0io->", "expected the output labels of dim_labels but found '}'", None),
    ("b0f_0i?->b0f", "bad dim_labels 'b0f_0i?->b0f': dim_labels part '0i?' needs exactly one "
     "'i' and one 'o'", 78),
])
def test_malformed_dim_labels_with_question_marks(labels, message, column):
    error = parse_error(conv_module(labels))
    where = f"bad.hlo:5:{column}" if column else "bad.hlo:6:1"
    assert f"{where}: error: {message}" in error
