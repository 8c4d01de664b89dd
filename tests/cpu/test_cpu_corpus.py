"""Every corpus module (tests/corpus/*.hlo, unoptimized and optimized)
compiled for cpu: modules using an op the backend does not generate code
for must fail to compile with UnimplementedError naming that op (and the
backend); all others must reproduce JAX's outputs from the .npz.

``UNSUPPORTED`` is the explicit expected-failure list (file -> the op its
error names). A module that starts compiling fails its test until it is
removed from the list, so newly supported modules are noticed.
"""
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "service"))
from pass_test_util import _corpus_interpreter_test, corpus_files  # noqa: E402

from xla import runtime  # noqa: E402
from xla.errors import UnimplementedError  # noqa: E402
from xla.hlo.parser import parse_hlo_module  # noqa: E402
from xla.tools.arrays import flatten_result  # noqa: E402

FILES = corpus_files()

UNSUPPORTED = {
}

PER_OP_ROUNDING = {"xla_allow_excess_precision": False}


def test_corpus_is_not_empty():
    assert len(FILES) >= 80, "tests/corpus is missing or incomplete"


def test_unsupported_list_names_existing_files():
    names = {p.name for p in FILES}
    assert set(UNSUPPORTED) <= names, sorted(set(UNSUPPORTED) - names)


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_corpus_module_on_cpu(path):
    helpers = _corpus_interpreter_test()
    text = path.read_text()
    module = parse_hlo_module(text, filename=str(path))
    op = UNSUPPORTED.get(path.name)
    if op is not None:
        with pytest.raises(UnimplementedError) as info:
            runtime.compile(module, "cpu")
        message = str(info.value)
        assert "cpu" in message and re.search(rf"(?<![\w-]){re.escape(op)}(?![\w-])", message), message
        return
    # JAX's outputs come from XLA:CPU, which rounds every f16/bf16 op of
    # these modules: compare with excess precision off (the default's results
    # are checked against JAX's within the types' precision in
    # tests/cpu/test_excess_precision.py).
    executable = runtime.compile(module, "cpu", debug_options=PER_OP_ROUNDING)
    data = helpers.load_npz(helpers.npz_for(path))
    params = executable.module.entry.parameters
    args = [helpers._as_type(data[f"arg{i}"], p.shape) for i, p in enumerate(params)]
    leaves = [s for _, s in executable.module.entry.root_instruction.shape.leaves()]
    expected = [helpers._as_type(data[f"out{i}"], s) for i, s in enumerate(leaves)]
    result = flatten_result(executable.execute(*args))
    assert len(result) == len(expected), f"{path.name}: {len(result)} results, JAX has {len(expected)}"
    original_ops = {i.opcode for i in parse_hlo_module(text).all_instructions()}
    for i, (a, e) in enumerate(zip(result, expected)):
        where = f"{path.name} out{i}"
        if original_ops & helpers.IMPLEMENTATION_DEFINED:
            assert (a.shape, a.dtype) == (e.shape, e.dtype), where
            continue
        helpers.assert_matches(a, e, where)
