"""One opcode table (xla/hlo/opcodes.py) behind every per-opcode registry:
rows only for known opcodes, one row each; and the coverage matrix, printed
(``pytest -s tests/test_opcode_coverage.py``), with the relations that must
hold between layers."""
import pytest

from xla.hlo import opcodes


def load_every_table():
    import xla.frontend.autodiff  # noqa: F401  (vjp)
    import xla.hlo.shape_inference  # noqa: F401
    import xla.service.algebraic_simplifier  # noqa: F401
    from xla.backends.cpu import ir_emitter
    from xla.hlo.evaluator.evaluator import load_handlers
    load_handlers()
    ir_emitter.load_extensions()
    return opcodes.TABLES


def cpu_opcodes():
    from xla.backends.cpu import element_generator, elemental_ir_emitter, ir_emitter
    return (set(elemental_ir_emitter._EMITTERS) | set(element_generator.GENERATORS)
            | set(ir_emitter.INSTRUCTION_EMITTERS) | set(ir_emitter.NO_CODE))


def coverage():
    tables = load_every_table()
    columns = {"shape inference": set(tables["shape inference"]),
               "evaluator": set(tables["evaluator"]),
               "cpu": cpu_opcodes(),
               "vjp": set(tables["vjp"]),
               "algsimp": set(tables["algebraic simplifier"])}
    return columns


def test_print_the_coverage_matrix():
    columns = coverage()
    names = list(columns)
    lines = [f"{'opcode':<32}" + "".join(f"{n:>17}" for n in names)]
    for op in sorted(opcodes.ALL_OPCODES):
        lines.append(f"{op:<32}" + "".join(f"{'x' if op in columns[n] else '.':>17}" for n in names))
    lines.append(f"{'opcodes: ' + str(len(opcodes.ALL_OPCODES)):<32}"
                 + "".join(f"{len(columns[n]):>17}" for n in names))
    print("\n".join(lines))
    assert len(lines) == len(opcodes.ALL_OPCODES) + 2
    # Today's floor: a layer that loses rows fails here.
    assert len(columns["shape inference"]) >= 122 and len(columns["evaluator"]) >= 111
    assert len(columns["cpu"]) >= 86 and len(columns["vjp"]) >= 54


def test_every_row_is_a_known_opcode():
    for name, table in load_every_table().items():
        unknown = sorted(set(table) - opcodes.ALL_OPCODES)
        assert unknown == [], f"{name}: {unknown}"


def test_what_runs_has_shape_inference_and_reference_semantics():
    columns = coverage()
    assert sorted(columns["evaluator"] - columns["shape inference"]) == []
    assert sorted(columns["cpu"] - columns["shape inference"]) == []
    # The evaluator defines the semantics the CPU is tested against.
    assert sorted(columns["cpu"] - columns["evaluator"]) == []


def test_a_second_row_or_an_unknown_opcode_is_an_error():
    table = opcodes.OpcodeTable("test table")
    try:
        table.register("add")(lambda: 1)
        with pytest.raises(ValueError, match="add registered twice"):
            table["add"] = lambda: 2
        with pytest.raises(ValueError, match="registered twice"):
            table.update({"add": 3})
        with pytest.raises(ValueError, match="'addd' is not an opcode"):
            table.register("addd")(lambda: 1)
        assert table["add"]() == 1
    finally:
        del opcodes.TABLES["test table"]
