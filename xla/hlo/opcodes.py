"""Opcode names as spelled in HLO text, grouped by what shape inference and
the backends need to know about them. Every layer keys its tables by these
strings (see shared/GUIDE.md, "One opcode, one row per layer")."""

UNARY_ELEMENTWISE = frozenset("""
abs negate sign exponential exponential-minus-one log log-plus-one sqrt rsqrt
cbrt tanh logistic sine cosine tan erf floor ceil round-nearest-afz
round-nearest-even is-finite not popcnt count-leading-zeros real imag copy
convert bitcast-convert reduce-precision acos acosh asin asinh atanh cosh sinh
""".split())

BINARY_ELEMENTWISE = frozenset("""
add subtract multiply divide remainder power maximum minimum and or xor
shift-left shift-right-arithmetic shift-right-logical compare atan2 complex mulhi
""".split())

TERNARY_ELEMENTWISE = frozenset(["select", "clamp"])

ELEMENTWISE = UNARY_ELEMENTWISE | BINARY_ELEMENTWISE | TERNARY_ELEMENTWISE | frozenset(["map"])

# Elementwise ops whose result element type differs from the operand's.
PRED_RESULT = frozenset(["compare", "is-finite"])

COLLECTIVES = frozenset("""
all-reduce all-gather reduce-scatter all-to-all collective-permute
all-reduce-start all-reduce-done all-gather-start all-gather-done
collective-permute-start collective-permute-done collective-broadcast
ragged-all-to-all
""".split())

OTHER = frozenset("""
parameter constant iota broadcast reshape bitcast transpose slice dynamic-slice
dynamic-update-slice concatenate pad reverse gather scatter reduce reduce-window
select-and-scatter dot ragged-dot scaled-dot convolution sort topk tuple get-tuple-element call while
conditional scan fusion custom-call rng rng-bit-generator rng-get-and-update-state
cholesky triangular-solve after-all opt-barrier replica-id partition-id
add-dependency domain fft dynamic-reshape get-dimension-size set-dimension-size
infeed outfeed send recv send-done recv-done async-start async-update async-done
copy-start copy-done batch-norm-training batch-norm-inference batch-norm-grad
stochastic-convert
""".split())

ALL_OPCODES = ELEMENTWISE | COLLECTIVES | OTHER

# Ops with side effects: never removed or merged by passes.
SIDE_EFFECTING = frozenset("""
rng rng-get-and-update-state infeed outfeed send recv send-done recv-done
all-reduce all-gather reduce-scatter all-to-all collective-permute
all-reduce-start all-reduce-done all-gather-start all-gather-done
collective-permute-start collective-permute-done after-all
""".split())


# Every per-opcode table of every layer, by name (shape inference, the
# evaluator, the CPU emitters, the gradient rules, the simplifier...): what
# tests/test_opcode_coverage.py prints as the coverage matrix.
TABLES = {}


class OpcodeTable(dict):
    """One layer's table keyed by opcode (one row per opcode).

    A row's opcode must be one of ``ALL_OPCODES`` (an opcode added to a
    layer is added here first), and each opcode gets one row: a second
    registration is an error, never a silent overwrite. ``register(*ops)``
    is the decorator form.
    """

    def __init__(self, name, rows=None):
        super().__init__()
        self.name = name
        TABLES[name] = self
        for op, value in (rows or {}).items():
            self[op] = value

    def __setitem__(self, op, value):
        if op not in ALL_OPCODES:
            raise ValueError(f"{self.name}: {op!r} is not an opcode (add it to xla/hlo/opcodes.py)")
        if op in self:
            raise ValueError(f"{self.name}: {op} registered twice")
        super().__setitem__(op, value)

    def update(self, *args, **kwargs):
        for op, value in dict(*args, **kwargs).items():
            self[op] = value

    def setdefault(self, op, value=None):
        if op not in self:
            self[op] = value
        return self[op]

    def register(self, *ops):
        def wrap(fn):
            for op in ops:
                self[op] = fn
            return fn
        return wrap
