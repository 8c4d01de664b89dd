"""Opcode names as spelled in HLO text, grouped by what shape inference and
the backends need to know about them. Every layer keys its tables by these
strings (see shared/GUIDE.md, "One opcode, one row per layer")."""

UNARY_ELEMENTWISE = frozenset("""
abs negate sign exponential exponential-minus-one log log-plus-one sqrt rsqrt
cbrt tanh logistic sine cosine tan erf floor ceil round-nearest-afz
round-nearest-even is-finite not popcnt count-leading-zeros real imag copy
convert bitcast-convert reduce-precision
""".split())

BINARY_ELEMENTWISE = frozenset("""
add subtract multiply divide remainder power maximum minimum and or xor
shift-left shift-right-arithmetic shift-right-logical compare atan2 complex
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
select-and-scatter dot convolution sort topk tuple get-tuple-element call while
conditional fusion custom-call rng rng-bit-generator rng-get-and-update-state
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
