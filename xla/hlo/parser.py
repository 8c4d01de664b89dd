"""Parser of XLA's HLO text format.

Accepts both styles XLA prints: the unoptimized text JAX hands to XLA
(``add.3 = f32[4]{0} add(Arg_0.1, Arg_0.1)``, no ``%``, no operand shapes,
``ENTRY main.4 {`` and ``} // main.4``) and XLA's optimized dumps
(``%add.3 = f32[4]{0} add(f32[4]{0} %x, f32[4]{0} %y)``, computation
signatures, the stack-frame tables). The style found is recorded in
``HloModule.print_options`` so that the printer writes the module back the
same way (see ``xla.hlo.printer``).

Attributes are parsed by kind (``xla.hlo.attributes.kind_of``); unknown ones
are kept verbatim as ``RawAttr``. Every malformed input raises
``HloParseError`` with a 1-based line and column; no other exception escapes.

The parser is recursive descent over the token stream of ``xla.hlo.lexer``
(one regular expression, a single pass; errors with line and column). This
module reads modules, computations, instructions and their attributes; the
values inside them (shapes, layouts, typed attribute values, literals) are
read by ``xla.hlo.value_parser``.
"""
import re

from xla.errors import HloParseError, ShapeError
from xla.hlo import opcodes
from xla.hlo.attributes import RawAttr, kind_of
from xla.hlo.ir import HloComputation, HloInstruction, HloModule
from xla.hlo.lexer import _EOF, _INT_RE, _PUNCT, _ROW, _STR, _WORD, _unescape_c
from xla.hlo.shape import Shape
from xla.hlo.value_parser import ValueParser
from xla.gc_util import paused_gc

__all__ = ["parse_hlo_module", "parse_shape", "parse_literal", "STACK_FRAME_SECTIONS"]

# Sections of newer dumps between the header and the first computation.
STACK_FRAME_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")

# Header attributes with a typed value; every other one is kept as RawAttr.
_HEADER_INT_ATTRS = ("replica_count", "num_partitions")

# Opcodes whose result shape says what the operands do not: it must be written.
_NEEDS_SHAPE = frozenset("""all-gather all-gather-start bitcast bitcast-convert broadcast
collective-permute-start constant convert iota parameter custom-call infeed recv recv-done send
send-done outfeed reduce-scatter reshape rng rng-bit-generator stochastic-convert
dynamic-reshape""".split())
# Attributes XLA's parser requires (an instruction without one is a parse
# error there, reported at the opcode here).
_REQUIRED_ATTRS = {"scan": ("dimensions", "num_carries", "to_apply")}


class _Parser(ValueParser):
    """Reads a module: its header, computations and instructions."""

    def __init__(self, text, filename=None, start=0, end=None, parent=None):
        super().__init__(text, filename, start, end, parent)
        self.style_percent = None
        self.style_operand_shapes = None
        self.instr_index = {}  # id(instr) -> token index of its name
        self.fixups = []  # (instr, attr name, kind, [(computation name, token index)])
        self.inferred = []  # (instr, token index) whose result shape was left out
        self.inferred_ids = set()
        self.computations = {}
        self.inline_computations = []  # written inline, not yet in the module
        self.unnamed_computations = []  # written inline, to be named
        self.unnamed_instructions = []  # written as operands, named in their computation
        self.attrs_before_body = []

    # ----- module ------------------------------------------------------------
    def parse_module(self):
        opts = {}
        header_attrs = {}
        if not self.at("HloModule"):
            # As XLA's parser: a module may be written without its header
            # (just computations); it is named after its entry computation.
            starts_computation = self.at("ENTRY") or (
                self.kind() == _WORD and self.kinds[self.pos + 1] != _EOF
                and self.vals[self.pos + 1] in ("(", "{"))
            if not starts_computation:
                self.expected("'HloModule' or a computation")
            module = HloModule("module")
            module.header_attrs = header_attrs
            return self._parse_computations(module, opts, headerless=True)
        self.pos += 1
        name = self.expect_word("a module name")
        module = HloModule(name.lstrip("%").rstrip(":"))
        self.accept(":")   # the old header form, "HloModule name:"
        while self.accept(","):
            attr_index = self.pos
            attr_name = self.expect_word("a module attribute name")
            self.expect("=")
            if attr_name in header_attrs:
                self.error(f"duplicate module attribute '{attr_name}'", attr_index)
            value_index = self.pos
            text = self.skip_balanced_value()
            if attr_name == "is_scheduled":
                if text not in ("true", "false"):
                    self.expected("'true' or 'false'", value_index)
                value = text == "true"
            elif attr_name in _HEADER_INT_ATTRS and _INT_RE.match(text):
                value = int(text)
            else:
                value = RawAttr(text)
            header_attrs[attr_name] = value
        if self.kind() != _EOF and not self.nls[self.pos]:
            self.expected("',' or a new line after the module header")
        module.header_attrs = header_attrs

        # Stack-frame tables: a section name alone on its line, then lines
        # that start with a number.
        while (self.kind() == _WORD and self.peek() in STACK_FRAME_SECTIONS
               and self.nls[self.pos + 1] and self.kinds[self.pos + 1] == _WORD
               and self.vals[self.pos + 1][:1].isdigit()):
            section = self.vals[self.pos]
            self.pos += 1
            lines = []
            while self.kind() == _WORD and self.nls[self.pos] and self.peek()[:1].isdigit():
                start = self.starts[self.pos]
                self.pos += 1
                while not self.nls[self.pos]:
                    self.pos += 1
                lines.append(self.text[start:self.ends[self.pos - 1]])
            module.extra_sections.append((section, lines))

        return self._parse_computations(module, opts)

    def _parse_computations(self, module, opts, headerless=False):
        comp_percent = None
        signature = None
        signature_layouts = False
        closing_comments = None
        entry = None
        while self.kind() != _EOF:
            comp, style = self.parse_computation(module)
            if comp_percent is None:
                comp_percent = style["percent"]
                signature = style["signature"]
            signature_layouts = signature_layouts or style["signature_layouts"]
            if closing_comments is None:
                closing_comments = style["comment"]
            if comp.is_entry:
                if entry is not None:
                    self.error(f"computation '{comp.name}' is marked ENTRY but "
                               f"'{entry.name}' already is", style["index"])
                entry = comp
            for inner in self.inline_computations:   # called from ``comp``: first
                module.add_computation(inner)
            self.unnamed_computations.extend(self.inline_computations)
            self.inline_computations = []
            module.add_computation(comp)
        if not module.computations:
            self.expected("a computation")
        for inner in self.unnamed_computations:
            base, n = inner.name, 0
            while f"{base}.{n}" in self.computations:
                n += 1
            inner.name = f"{base}.{n}"
            self.computations[inner.name] = inner
        self._make_names_unique(module)
        if entry is None:
            entry = module.computations[-1]
        module.set_entry(entry)
        if headerless:
            module.name = entry.name

        for instr, attr_name, kind, refs in self.fixups:
            comps = []
            for ref_name, offset in refs:
                comp = self.computations.get(ref_name)
                if comp is None:
                    self.error_at(offset, f"unknown computation '%{ref_name}'")
                comps.append(comp)
            instr.attrs[attr_name] = comps[0] if kind == "computation" else tuple(comps)

        self._infer_shapes()
        percent = self.style_percent if self.style_percent is not None else comp_percent
        opts["percent"] = bool(percent)
        opts["operand_shapes"] = bool(self.style_operand_shapes)
        opts["signature"] = bool(signature)
        opts["signature_layouts"] = signature_layouts
        opts["closing_comment"] = bool(closing_comments)
        opts["index_comments"] = self.index_comments.get("shape", True)
        opts["operand_index_comments"] = self.index_comments.get(
            "operand", opts["index_comments"] if "shape" in self.index_comments else True)
        tail = self.text[self.ends[-2]:] if len(self.kinds) > 1 else ""
        if closing_comments:
            tail = re.sub(r"\A[ \t]*//[^\n]*", "", tail)
        opts["trailing"] = tail if not tail.strip() else "\n"
        if self.attrs_before_body:
            opts["attrs_before_body"] = frozenset(self.attrs_before_body)
        module.print_options = opts
        return module

    def _make_names_unique(self, module):
        """As XLA: names are scoped to their computation when read, and an
        instruction whose name an earlier computation already has is renamed
        on insertion into the module (``p0`` -> ``p0.1``); names the text
        gave are kept before those given to instructions written as operands."""
        generated = {id(i) for i in self.unnamed_instructions}
        taken = set()
        clashes = []
        for comp in module.computations:
            for instr in comp.instructions:
                if id(instr) in generated:
                    continue
                if instr.name in taken:
                    clashes.append(instr)
                else:
                    taken.add(instr.name)
        for instr in clashes + self.unnamed_instructions:
            if instr.name in taken:
                base = re.sub(r"\.[0-9]+$", "", instr.name)
                n = 1
                while f"{base}.{n}" in taken:
                    n += 1
                instr.name = f"{base}.{n}"
            taken.add(instr.name)

    def _infer_shapes(self):
        """The result shapes left out, from the operands' (in dependency order)."""
        from xla.hlo import shape_inference
        pending = list(self.inferred)
        waiting = {id(i) for i, _ in pending}
        while pending:
            later = []
            for instr, index in pending:
                if any(id(o) in waiting for o in instr.operands if o is not None):
                    later.append((instr, index))
                    continue
                if instr.opcode in ("dot", "ragged-dot", "scaled-dot", "convolution"):
                    # No preferred element type: the lhs's.
                    instr.shape = Shape.array(instr.operands[0].shape.element_type, ())
                try:
                    shape = shape_inference.infer_shape(instr)
                except ShapeError as e:
                    self.error(f"cannot infer the result shape of {instr.opcode}: {e}", index)
                instr.shape = shape
                waiting.discard(id(instr))
            if len(later) == len(pending):
                instr, index = later[0]
                self.error(f"cannot infer the result shape of {instr.opcode}: its operands' "
                           "shapes depend on it", index)
            pending = later

    def parse_computation(self, module):
        start_index = self.pos
        is_entry = self.accept("ENTRY")
        name_index = self.pos
        name, percent = self.expect_name("a computation name")
        if name in self.computations:
            self.error(f"duplicate computation name '{name}'", name_index)
        style = {"percent": percent, "signature": False, "signature_layouts": False,
                 "comment": False, "index": start_index}
        if self.at("("):
            style["signature"] = True
            self.pos += 1
            if not self.accept(")"):
                while True:
                    self.expect_name("a parameter name")
                    self.expect(":")
                    s = self.parse_shape()
                    if _has_layout(s):
                        style["signature_layouts"] = True
                    if self.accept(")"):
                        break
                    if not self.at(","):
                        self.expected("',' or ')' in the computation's parameter list")
                    self.pos += 1
            self.expect("->")
            s = self.parse_shape()
            if _has_layout(s):
                style["signature_layouts"] = True
        extra_attrs = {}
        before_body = False
        while self.accept(","):
            attr_name = self.expect_word("a computation attribute name")
            self.expect("=")
            extra_attrs[attr_name] = RawAttr(self.skip_balanced_value())
            before_body = True
        if self.kinds[self.pos] == _ROW and not self.vals[self.pos][1:-1].strip():
            self.error(f"computation '{name}' has no instructions")
        if not self.at("{"):
            self.expected("'{' to start the body of computation '" + name + "'"
                          if style["signature"] or extra_attrs else "'(' or '{' after the computation name")
        open_index = self.pos
        self.pos += 1
        comp = HloComputation(name, is_entry=is_entry)
        self.computations[name] = comp
        self.parse_body(comp, open_index)
        close_end = self.ends[self.pos - 1]
        # JAX's text ends a computation with '} // name'.
        m = re.compile(r"[ \t]*//[ \t]*(\S+)").match(self.text, close_end)
        if m and m.group(1) == name:
            style["comment"] = True
        while self.kind() == _PUNCT and self.at(",") and not self.nls[self.pos]:
            self.pos += 1
            attr_name = self.expect_word("a computation attribute name")
            self.expect("=")
            extra_attrs[attr_name] = RawAttr(self.skip_balanced_value())
        comp.extra_attrs = extra_attrs
        if before_body:
            self.attrs_before_body.append(name)
        return comp, style

    def parse_body(self, comp, open_index):
        instrs = {}
        root = None
        # (instr, operand position or 'control', name, token index, compact
        # get-tuple-element indices)
        forward = []
        unnamed = []  # instructions written as operands
        while True:
            if self.at("}"):
                self.pos += 1
                break
            if self.kind() == _EOF:
                self.error(f"expected '}}' to close computation '{comp.name}' but found end of file",
                           open_index)
            # (A computation written inline in an attribute has its own.)
            self.nested = nested = []
            instr, is_root, name_index = self.parse_instruction(instrs, forward)
            for inner in nested:
                comp.add_instruction(inner)
                unnamed.append(inner)
            if instr.name in instrs:
                self.error(f"duplicate instruction name '{instr.name}' in computation '{comp.name}'",
                           name_index)
            instrs[instr.name] = instr
            comp.add_instruction(instr)
            if is_root:
                if root is not None:
                    self.error(f"computation '{comp.name}' has more than one ROOT instruction",
                               name_index - 1)
                root = instr
        if not comp.instructions:
            self.error(f"computation '{comp.name}' has no instructions", self.pos - 1)
        for inner in unnamed:
            n = 0
            while f"{inner.opcode}.{n}" in instrs:
                n += 1
            inner.name = f"{inner.opcode}.{n}"
            instrs[inner.name] = inner
        self.unnamed_instructions.extend(unnamed)
        numbers = {}
        for instr in comp.instructions:
            if instr.opcode == "parameter":
                if instr.parameter_number in numbers:
                    self.error(f"parameter number {instr.parameter_number} is used by both "
                               f"'{numbers[instr.parameter_number]}' and '{instr.name}'",
                               self.instr_index[id(instr)])
                numbers[instr.parameter_number] = instr.name
        if forward:
            elements = {}  # (id(tuple), index) -> its compact get-tuple-element
            for instr, where, ref, offset, indices in forward:
                target = instrs.get(ref)
                if target is None:
                    what = "control predecessor" if where == "control" else "operand"
                    self.error_at(offset, f"unknown instruction '%{ref}' used as {what}")
                if where == "control":
                    preds = list(instr.attrs["control-predecessors"])
                    preds[preds.index(ref)] = target
                    instr.attrs["control-predecessors"] = tuple(preds)
                else:
                    written = ref
                    for index, index_token in indices:
                        target = self._tuple_element(comp, instrs, elements, target, index,
                                                     index_token, written)
                        written += f"#{index}"
                    instr.operands[where] = target
            cyclic = _make_topological(comp)
            if cyclic is not None:
                self.error(f"instruction '{cyclic.name}' depends on itself (a cycle through its "
                           f"operands or control predecessors)", self.instr_index[id(cyclic)])
        comp.root_instruction = root if root is not None else comp.instructions[-1]

    def parse_tuple_indices(self):
        """The indices of a compact get-tuple-element operand, as XLA's
        compact_gte printing writes it: ``p0#1`` is element 1 of ``p0`` and
        ``p0#1#0`` element 0 of that. Returns ((index, token index), ...)."""
        indices = []
        while self.at("#"):
            self.pos += 1
            index_token = self.pos
            index = self.expect_int("a tuple index after '#'")
            if index < 0:
                self.error(f"a tuple index after '#' must be non-negative, got {index}", index_token)
            indices.append((index, index_token))
        return tuple(indices)

    def _tuple_element(self, comp, instrs, elements, target, index, index_token, written):
        """The get-tuple-element a compact ``target#index`` operand stands
        for: one per tuple and index in the computation, named
        ``<tuple>_<index>`` (made unique), placed before its first user."""
        key = (id(target), index)
        element = elements.get(key)
        if element is not None:
            return element
        inferred = id(target) in self.inferred_ids
        if inferred:  # the tuple's shape is known only once inferred
            shape = Shape.tuple(())
        else:
            if not target.shape.is_tuple:
                self.error(f"'{written}#{index}' takes a tuple element but '{written}' has shape "
                           f"{target.shape.to_text(False)}, not a tuple", index_token)
            n = len(target.shape.tuple_shapes)
            if index >= n:
                self.error(f"tuple index {index} is out of range: '{written}' has shape "
                           f"{target.shape.to_text(False)} with {n} element{'s' * (n != 1)}",
                           index_token)
            shape = target.shape.tuple_shapes[index]
        name = base = f"{target.name}_{index}"
        n = 1
        while name in instrs:
            name = f"{base}.{n}"
            n += 1
        element = HloInstruction("get-tuple-element", shape, [target], name=name,
                                 attrs={"index": index})
        instrs[name] = element
        comp.add_instruction(element)
        elements[key] = element
        self.instr_index[id(element)] = index_token
        self.unnamed_instructions.append(element)  # names from the text come first
        if inferred:
            self.inferred.append((element, index_token))
            self.inferred_ids.add(id(element))
        return element

    def parse_instruction(self, instrs, forward):
        is_root = self.accept("ROOT")
        name_index = self.pos
        if self.kind() != _WORD:
            self.expected("an instruction name" + ("" if is_root else " or '}'"))
        name, percent = self.expect_name("an instruction name")
        if self.style_percent is None:
            self.style_percent = percent
        self.expect("=")
        inferred = False
        if not self.at_shape():
            if self.kind() == _WORD and self.peek(1) == "(" and _is_opcode(self.peek()) \
                    and self.peek() not in _NEEDS_SHAPE:
                # As XLA: a result shape left out is inferred (after parsing,
                # when operands and called computations are known).
                inferred = True
            elif self.kind() == _WORD and self.peek(1) == "(":
                self.expected("the instruction's result shape")
            elif self.kind() == _WORD:
                self.parse_shape()  # reports the bad element type
            if not inferred:
                self.expected("a shape")
        shape = Shape.tuple(()) if inferred else self.parse_shape()
        instr = self.parse_rhs(name, shape, name_index, instrs, forward, inferred)
        if self.kind() != _EOF and not self.nls[self.pos] and not self.at("}") and not (
                self.at("ROOT") or (self.kind() == _WORD and self.peek(1) == "=")):
            # (Another instruction may follow on the same line, as XLA allows.)
            self.expected("',' or a new line after the instruction")
        return instr, is_root, name_index

    def parse_rhs(self, name, shape, name_index, instrs, forward, inferred=False, nested=False):
        """What follows an instruction's shape: opcode, operands and (unless
        ``nested``, an instruction written as an operand) attributes."""
        opcode_index = self.pos
        opcode = self.expect_word("an opcode")
        if not _is_opcode(opcode):
            self.error(f"unknown opcode '{opcode}'", opcode_index)
        open_index = self.pos
        self.expect("(")
        operands = []
        pending = []  # operands defined later in the computation
        literal = None
        parameter_number = None
        if opcode == "parameter":
            parameter_number = self.expect_int("a parameter number")
            if parameter_number < 0:
                self.error("parameter numbers must be non-negative", self.pos - 1)
            self.expect(")")
        elif opcode == "constant":
            if self.at_shape() and not self.at("("):
                self.parse_shape()  # old style 'constant(f32[] 1)': the shape is redundant
            literal = self.parse_literal(shape)
            if not self.at(")"):
                self.expected("')' after the constant's value")
            self.pos += 1
        else:
            if not self.accept(")"):
                while True:
                    if self.at_shape():
                        operand_shape = self.parse_shape()
                        if self.kind() == _WORD and self.peek(1) == "(" and not _is_opcode(self.peek()):
                            self.error(f"unknown opcode '{self.peek()}'", self.pos)
                        if self.kind() == _WORD and self.peek(1) == "(":
                            # An instruction written as an operand, as XLA
                            # allows ('add(f32[] parameter(0), f32[] constant(1))'):
                            # it comes first in the computation, under a name
                            # given once the computation is read.
                            inner = self.parse_rhs(None, operand_shape, self.pos, instrs,
                                                   forward, nested=True)
                            self.nested.append(inner)
                            operands.append(inner)
                            if self.accept(")"):
                                break
                            if not self.at(","):
                                self.expected("',' or ')' after an operand")
                            self.pos += 1
                            continue
                        if self.style_operand_shapes is None:
                            self.style_operand_shapes = True
                    elif self.style_operand_shapes is None:
                        self.style_operand_shapes = False
                    ref_offset = self.starts[self.pos]
                    ref, _ = self.expect_name("an operand name")
                    indices = self.parse_tuple_indices() if self.at("#") else ()
                    target = None if indices else instrs.get(ref)
                    if target is None:
                        pending.append((len(operands), ref, ref_offset, indices))
                    operands.append(target)
                    if self.accept(")"):
                        break
                    if not self.at(","):
                        self.expected("',' or ')' after an operand")
                    self.pos += 1
                if len(operands) > 5:
                    self.note_index_comments("operand", open_index)
        instr = HloInstruction(opcode, shape, operands, name=name, literal=literal,
                               parameter_number=parameter_number)
        self.instr_index[id(instr)] = name_index
        if inferred:
            self.inferred.append((instr, name_index))
            self.inferred_ids.add(id(instr))
        for where, ref, index, indices in pending:
            forward.append((instr, where, ref, index, indices))
        while self.at(",") and not nested:
            self.pos += 1
            self.parse_attribute(instr, instrs, forward)
        for attr in () if nested else _REQUIRED_ATTRS.get(opcode, ()):
            if attr not in instr.attrs:
                self.error(f"attribute {attr} is expected but not seen", opcode_index)
        return instr

    # ----- attributes -------------------------------------------------------------
    def parse_attribute(self, instr, instrs, forward):
        name_index = self.pos
        if self.kind() != _WORD or self.peek().startswith("%"):
            self.expected("an attribute name")
        name = self.vals[self.pos]
        self.pos += 1
        self.expect("=")
        if name in instr.attrs:
            self.error(f"duplicate attribute '{name}'", name_index)
        kind = kind_of(name)
        value_index = self.pos
        if kind == "raw" or (name == "slice_sizes" and self.at("{") and self.peek(1).startswith("{")):
            # (collective-permute's in-place form has one list per pair.)
            value = RawAttr(self.skip_balanced_value())
        elif kind == "dims":
            value = self.plain_int_list()
            if value is None:
                p = self.enter_group()
                value = p.parse_int_list("{", "}")
                self.leave_group(p)
        elif kind == "int":
            value = self.expect_int(f"an integer value for '{name}'")
        elif kind == "bool":
            v = self.peek()
            if v not in ("true", "false") or self.kind() != _WORD:
                self.expected(f"'true' or 'false' for '{name}'")
            self.pos += 1
            value = v == "true"
        elif kind == "enum":
            value = self.expect_word(f"a value for '{name}'")
            if value.startswith("%") or value[:1] in "-+0123456789":
                self.expected(f"a value for '{name}'", value_index)
        elif kind == "string":
            if self.kind() != _STR:
                self.expected(f"a string for '{name}'")
            value = _unescape_c(self.vals[self.pos][1:-1])
            self.pos += 1
        elif kind == "slice":
            p = self.enter_group()
            value = p.parse_slice()
            self.leave_group(p)
        elif kind == "padding":
            value = self.parse_padding()
        elif kind == "window":
            p = self.enter_group()
            value = p.parse_window()
            self.leave_group(p)
        elif kind == "dim_labels":
            value = self.parse_dim_labels()
        elif kind == "computation" and self.at("{"):
            # Written inline, as XLA allows ('to_apply={ ... }'): a computation
            # of its own, named once the module is read.
            open_index = self.pos
            self.pos += 1
            value = HloComputation(f"{instr.opcode}.{name}")
            self.parse_body(value, open_index)
            self.inline_computations.append(value)
        elif kind == "computation":
            ref, _ = self.expect_name(f"a computation name for '{name}'")
            comp = self.computations.get(ref)
            if comp is None:
                self.fixups.append((instr, name, kind, [(ref, self.starts[value_index])]))
            value = comp
        elif kind == "computations":
            p = self.enter_group()
            refs = p.parse_name_list(f"a computation name in '{name}'")
            self.leave_group(p)
            comps = [self.computations.get(r) for r, _ in refs]
            if any(c is None for c in comps):
                self.fixups.append((instr, name, kind, refs))
            value = tuple(comps)
        elif kind == "instructions":
            p = self.enter_group()
            refs = p.parse_name_list(f"an instruction name in '{name}'")
            self.leave_group(p)
            preds = []
            for ref, offset in refs:
                target = instrs.get(ref)
                if target is None:
                    forward.append((instr, "control", ref, offset, ()))
                    target = ref
                preds.append(target)
            value = tuple(preds)
        else:  # a kind this parser does not know: keep the text
            value = RawAttr(self.skip_balanced_value())
        instr.attrs[name] = value


def _has_layout(shape):
    if shape.is_tuple:
        return any(_has_layout(s) for s in shape.tuple_shapes)
    return shape.layout is not None and (shape.rank > 0 or bool(shape.layout.extra))


_ASYNC_SUFFIXES = ("-start", "-update", "-done")


def _is_opcode(opcode):
    if opcode in opcodes.ALL_OPCODES:
        return True
    # XLA's syntax sugar for async ops: 'custom-call-start', 'add-done'...
    for suffix in _ASYNC_SUFFIXES:
        if opcode.endswith(suffix):
            base = opcode[:-len(suffix)]
            return base in opcodes.ALL_OPCODES
    return False


def _make_topological(comp):
    """Reorders comp.instructions so operands come first, keeping text order otherwise.

    Returns an instruction on a dependency cycle, or None.
    """
    order = comp.instructions
    index = {id(i): k for k, i in enumerate(order)}
    done = set()
    active = set()
    out = []
    for start in order:
        if id(start) in done:
            continue
        stack = [(start, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                active.discard(id(node))
                done.add(id(node))
                out.append(node)
                continue
            if id(node) in done:
                continue
            if id(node) in active:
                return node
            active.add(id(node))
            stack.append((node, True))
            preds = [p for p in list(node.operands) + list(node.control_predecessors)
                     if isinstance(p, HloInstruction) and id(p) in index and id(p) not in done]
            for p in sorted(preds, key=lambda p: -index[id(p)]):
                if id(p) in active:
                    return p
                stack.append((p, False))
    comp.instructions = out
    return None


def parse_hlo_module(text, filename=None):
    """Parses HLO module text; raises HloParseError on malformed input."""
    if not isinstance(text, str):
        raise TypeError("parse_hlo_module expects text (str)")
    parser = _Parser(text, filename)
    try:
        with paused_gc():
            return parser.parse_module()
    except HloParseError:
        raise
    except RecursionError:
        parser.error("input is nested too deeply")


def parse_shape(text):
    """Parses one shape, e.g. ``f32[2,3]{1,0}`` or ``(f32[], s32[4])``."""
    parser = _Parser(text)
    try:
        shape = parser.parse_shape()
    except RecursionError:
        parser.error("shape is nested too deeply")
    if parser.kind() != _EOF:
        parser.expected("end of the shape")
    return shape


def parse_literal(text, shape):
    """Parses a literal (the inside of ``constant(...)``) of the given shape."""
    if isinstance(shape, str):
        shape = parse_shape(shape)
    parser = _Parser(text)
    try:
        value = parser.parse_literal(shape)
    except RecursionError:
        parser.error("literal is nested too deeply")
    if parser.kind() != _EOF:
        parser.expected("end of the literal")
    return value
