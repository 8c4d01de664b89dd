"""xla.lax.composite: the call it emits (is_composite, the composite.*
frontend attributes), and its decomposition run where no backend knows the
name (call-inliner inlines it)."""
import numpy as np
import pytest

import xla


def _double_and_sum(x, scale):
    return x * np.asarray(scale, x.dtype), np.sum(x)


def test_the_call_carries_its_name_attributes_and_version():
    f = xla.lax.composite(_double_and_sum, "my.double", version=2)
    text = xla.jit(lambda x: f(x, scale=3)).lower(np.ones(4, np.float32)).as_hlo_text()
    line = next(line for line in text.splitlines() if " call(" in line)
    assert "is_composite=true" in line
    assert ('frontend_attributes={composite.attributes={scale = 3 : i64},'
            'composite.name="my.double",composite.version="2"}') in line


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_an_unknown_composite_runs_its_decomposition(backend):
    f = xla.lax.composite(_double_and_sum, "my.double")
    x = np.arange(4, dtype=np.float32)
    doubled, total = xla.jit(lambda x: f(x, scale=2), backend=backend)(x)
    np.testing.assert_array_equal(doubled, 2 * x)
    assert total == 6
    single = xla.lax.composite(lambda x, *, flag: -x, "my.neg")
    np.testing.assert_array_equal(xla.jit(lambda x: single(x, flag=True), backend=backend)(x), -x)


def test_the_decomposition_may_not_capture_traced_values():
    def f(x, y):
        return xla.lax.composite(lambda a: a + y, "my.capture")(x)
    with pytest.raises(Exception, match="the decomposition of composite my.capture"):
        xla.jit(f)(np.ones(2), np.ones(2))


def test_attributes_are_bools_ints_and_strings():
    f = xla.lax.composite(lambda x, *, mode: x, "my.id")
    with pytest.raises(Exception, match="bools, ints and plain strings"):
        xla.jit(lambda x: f(x, mode=1.5))(np.ones(2))
