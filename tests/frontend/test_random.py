"""xla.random: deterministic, backend-independent, statistically sane."""
import numpy as np
import pytest

import xla
import xla.random as xr


def test_same_key_same_numbers_different_keys_differ():
    k = xr.key(0)
    a, b = xr.uniform(k, (1000,)), xr.uniform(k, (1000,))
    np.testing.assert_array_equal(a, b)
    c = xr.uniform(xr.key(1), (1000,))
    assert np.mean(a == c) < 0.01


def test_cpu_and_interpreter_agree():
    k = xr.key(7)
    f = lambda k: (xr.uniform(k, (64,), np.float64), xr.randint(k, (16,), -5, 5), xr.normal(k, (32,)))
    got_cpu = xla.jit(f, backend="cpu")(k)
    got_int = xla.jit(f, backend="interpreter")(k)
    # The same bits; uniform and randint are exact functions of them.
    np.testing.assert_array_equal(got_cpu[0], got_int[0])
    np.testing.assert_array_equal(got_cpu[1], got_int[1])
    # normal goes through log and cos, whose last bit may differ by backend.
    np.testing.assert_allclose(got_cpu[2], got_int[2], rtol=1e-6, atol=1e-6)


def test_split_gives_independent_streams():
    k1, k2 = xr.split(xr.key(3))
    assert not np.array_equal(k1, k2)
    a, b = xr.uniform(k1, (20000,)), xr.uniform(k2, (20000,))
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.03
    keys = xr.split(xr.key(3), 5)
    assert keys.shape == (5, 2) and len({tuple(k) for k in keys}) == 5


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uniform_range_and_moments(dtype):
    u = xr.uniform(xr.key(11), (200000,), dtype, minval=-1.0, maxval=3.0)
    assert u.dtype == dtype
    assert u.min() >= -1.0 and u.max() < 3.0
    assert abs(u.mean() - 1.0) < 0.02
    assert abs(u.var() - 16 / 12) < 0.02


def test_normal_moments():
    z = xr.normal(xr.key(5), (200000,))
    assert z.dtype == np.float32
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    assert np.all(np.isfinite(z))


def test_randint_bounds_and_coverage():
    r = xr.randint(xr.key(2), (10000,), 3, 9)
    assert r.dtype == np.int32
    assert r.min() == 3 and r.max() == 8
    counts = np.bincount(r - 3)
    assert counts.min() > 1400


def test_permutation_and_bernoulli_and_fold_in():
    p = xr.permutation(xr.key(4), 50)
    np.testing.assert_array_equal(np.sort(p), np.arange(50))
    assert not np.array_equal(p, np.arange(50))
    b = xr.bernoulli(xr.key(4), 0.25, (40000,))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.25) < 0.01
    assert not np.array_equal(xr.fold_in(xr.key(4), 1), xr.fold_in(xr.key(4), 2))


def test_random_inside_jit_with_a_traced_key():
    @xla.jit
    def noisy(x, k):
        return x + xr.normal(k, x.shape, np.float64) * 0.0 + xr.uniform(k, x.shape, np.float64)

    x = np.zeros(4)
    np.testing.assert_array_equal(noisy(x, xr.key(9)), xr.uniform(xr.key(9), (4,), np.float64))


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_low_precision_uniform_and_normal(dtype):
    import ml_dtypes
    dtype = np.dtype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    u = xr.uniform(xr.key(12), (50000,), dtype, minval=2.0, maxval=4.0)
    assert u.dtype == dtype
    u64 = u.astype(np.float64)
    assert u64.min() >= 2.0 and u64.max() < 4.0
    assert abs(u64.mean() - 3.0) < 0.03
    z = xr.normal(xr.key(12), (50000,), dtype).astype(np.float64)
    assert np.all(np.isfinite(z)) and abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02


def test_uniform_stays_below_maxval_in_a_narrow_interval():
    lo = np.float32(1.0)
    hi = np.nextafter(np.nextafter(lo, np.float32(2)), np.float32(2))     # two floats above lo
    u = xr.uniform(xr.key(13), (5000,), np.float32, minval=lo, maxval=hi)
    assert u.min() >= lo and u.max() < hi


def test_bernoulli_shape_follows_p_and_permutation_of_an_array():
    p = np.array([0.0, 1.0, 0.5, 0.5])
    draws = np.stack([xr.bernoulli(k, p) for k in xr.split(xr.key(14), 400)])
    assert draws.shape == (400, 4)
    assert not draws[:, 0].any() and draws[:, 1].all()
    assert 0.4 < draws[:, 2].mean() < 0.6 and not np.array_equal(draws[:, 2], draws[:, 3])
    x = np.arange(12.0).reshape(3, 4)
    shuffled = xr.permutation(xr.key(15), x, axis=1)
    np.testing.assert_array_equal(np.sort(shuffled, axis=1), x)
    perm = xr.permutation(xr.key(15), 4)
    np.testing.assert_array_equal(shuffled, x[:, perm])


def test_key_from_a_traced_seed_matches_the_concrete_key():
    f = xla.jit(lambda s: xr.uniform(xr.key(s), (8,)))
    np.testing.assert_array_equal(f(np.int32(21)), xr.uniform(xr.key(21), (8,)))
    assert not np.array_equal(f(np.int32(21)), f(np.int32(22)))
