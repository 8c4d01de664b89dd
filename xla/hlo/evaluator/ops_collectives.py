"""Interpreter handlers: collectives on a single replica and partition, and
the dynamic-shape ops on static shapes.

The interpreter runs one replica of one partition, so every replica group
has exactly one member (itself):

* all-reduce, reduce-scatter: to_apply over one participant is the
  identity -- the result is the operand (tuple of operands when variadic);
* all-gather, all-to-all: concatenating / exchanging one piece is the
  identity;
* collective-permute: a replica receives from the pair (source, 0); with a
  pair {0,0} the result is the operand, without any pair targeting replica
  0 it is all zeros (XLA's rule for a replica that receives nothing);
* the -start/-done async forms: start carries the value, done unwraps it.

A module compiled for more participants (result shapes that differ from
the operand's, e.g. all-gather growing a dimension) is rejected with
UnimplementedError.

dynamic-reshape returns its operand's values reshaped to the sizes given
(static shapes); get-dimension-size and set-dimension-size live in
data_movement.py.
"""
import re

import numpy as np

from xla.hlo.evaluator.registry import register
from xla.errors import UnimplementedError


def _leaf_shapes(shape):
    return list(shape.tuple_shapes) if shape.is_tuple else [shape]


def _identity(instr, operands, shape=None):
    shape = instr.shape if shape is None else shape
    shapes = _leaf_shapes(shape)
    if len(shapes) != len(operands):
        raise UnimplementedError(f"{instr.opcode} {instr.name}: unexpected operand count on the interpreter")
    out = []
    for x, s in zip(operands, shapes):
        if tuple(np.shape(x)) != tuple(s.dimensions):
            raise UnimplementedError(
                f"{instr.opcode} {instr.name} needs more than one participant "
                f"({tuple(np.shape(x))} -> {s}); the interpreter runs a single replica")
        out.append(np.asarray(x).astype(s.dtype, copy=False))
    return tuple(out) if shape.is_tuple else out[0]


@register("all-reduce", "reduce-scatter", "all-gather", "all-to-all", "all-reduce-start")
def collective_identity(instr, operands, ctx):
    return _identity(instr, operands)


@register("all-reduce-done")
def all_reduce_done(instr, operands, ctx):
    return operands[0]


@register("all-gather-start")
def all_gather_start(instr, operands, ctx):
    # Shape (operand(s), result(s)).
    shapes = instr.shape.tuple_shapes
    results = _identity(instr, operands, shapes[1])
    ops = tuple(operands) if shapes[0].is_tuple else operands[0]
    return (ops, results)


@register("all-gather-done", "collective-permute-done")
def async_pair_done(instr, operands, ctx):
    return operands[0][1]


def _source_target_pairs(instr):
    raw = instr.attr("source_target_pairs")
    text = getattr(raw, "text", raw)
    if text is None:
        return []
    if not isinstance(text, str):
        return [tuple(p) for p in text]
    return [(int(a), int(b)) for a, b in re.findall(r"\{\s*(-?\d+)\s*,\s*(-?\d+)\s*\}", text)]


def _permute(instr, x, shape):
    pairs = _source_target_pairs(instr)
    if (0, 0) in pairs:
        return np.asarray(x).astype(shape.dtype, copy=False)
    if any(t == 0 for _, t in pairs):
        raise UnimplementedError(
            f"collective-permute {instr.name} receives from another replica; the interpreter runs one")
    return np.zeros(shape.dimensions, shape.dtype)


@register("collective-permute")
def collective_permute(instr, operands, ctx):
    shapes = _leaf_shapes(instr.shape)
    if len(operands) >= 2 and not instr.shape.is_tuple:
        # In-place form (input, output, input_start_indices, output_start_indices).
        raise UnimplementedError("in-place collective-permute on the interpreter")
    out = [_permute(instr, x, s) for x, s in zip(operands, shapes)]
    return tuple(out) if instr.shape.is_tuple else out[0]


@register("collective-permute-start")
def collective_permute_start(instr, operands, ctx):
    shapes = instr.shape.tuple_shapes
    result = _permute(instr, operands[0], shapes[1])
    rest = tuple(np.zeros(s.dimensions, s.dtype) if s.is_array else None for s in shapes[2:])
    return (operands[0], result) + rest


@register("dynamic-reshape")
def dynamic_reshape(instr, operands, ctx):
    x = np.asarray(operands[0])
    sizes = [int(s) for s in operands[1:]]
    if not sizes:
        sizes = list(instr.shape.dimensions)
    return x.reshape(sizes).astype(instr.shape.dtype, copy=False)
