"""Philox4x32-10 and the uniform/normal transforms (CPU target)."""

import math

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from gpuensembles.core import rng

# Random123 tests/kat_vectors, "philox4x32 10" lines: counter, key, expected output.
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


@pytest.mark.parametrize("counter, key, expected", KAT)
def test_philox_known_answers(counter, key, expected):
    assert tuple(int(x) for x in rng.philox4x32(*counter, *key)) == expected


@given(st.integers(0, 2**32 - 1))
def test_uniforms_strictly_inside_unit_interval(x):
    for f in (rng.uint32_to_uniform_f32, rng.uint32_to_uniform_f64):
        u = f(np.uint32(x))
        assert 0.0 < u < 1.0


def test_uniform_extremes():
    top = np.uint32(2**32 - 1)
    assert rng.uint32_to_uniform_f32(top) == np.float32(1 - 2**-24)
    assert rng.uint32_to_uniform_f32(np.uint32(0)) == np.float32(2**-33)
    assert rng.uint32_to_uniform_f64(top) == 1 - 2**-33
    assert rng.uint32_to_uniform_f64(np.uint32(0)) == 2**-33


@numba.njit
def _normals(normals4, seed, stream, realizations, draws):
    out = np.empty((realizations, 4 * draws))
    for r in range(realizations):
        for d in range(draws):
            z = normals4(seed, stream, r, d)
            for j in range(4):
                out[r, 4 * d + j] = z[j]
    return out


@pytest.fixture(scope="module", params=["f32", "f64"])
def normals(request):
    normals4 = rng.normals4_f32 if request.param == "f32" else rng.normals4_f64
    return normals4, _normals(normals4, 12345, 7, 512, 128)  # 262144 draws


def test_normal_moments(normals):
    _, z = normals
    z = z.ravel()
    n = z.size
    # standard errors of the sample moments of N(0, 1): mean 1/sqrt(n), variance
    # sqrt(2/n), skewness sqrt(6/n), excess kurtosis sqrt(24/n)
    assert abs(z.mean()) < 4 / math.sqrt(n)
    assert abs(z.var() - 1) < 4 * math.sqrt(2 / n)
    assert abs(stats.skew(z)) < 4 * math.sqrt(6 / n)
    assert abs(stats.kurtosis(z)) < 4 * math.sqrt(24 / n)


def test_normals_pass_ks(normals):
    _, z = normals
    result = stats.kstest(z.ravel(), "norm")
    assert result.pvalue > 1e-3, result


def test_every_output_word_is_normal(normals):
    # Box-Muller uses all four words: each of the four positions is itself N(0, 1)
    _, z = normals
    for j in range(4):
        assert stats.kstest(z[:, j::4].ravel(), "norm").pvalue > 1e-3


@pytest.mark.parametrize("shift", ["stream", "realization", "draw", "seed"])
def test_neighbours_uncorrelated(normals, shift):
    normals4, z = normals  # seed 12345, stream 7, 512 realizations x 128 draws
    if shift == "stream":
        other = _normals(normals4, 12345, 8, 512, 128)
    elif shift == "seed":
        other = _normals(normals4, 12346, 7, 512, 128)
    elif shift == "realization":
        z, other = z[:-1], z[1:]
    else:
        z, other = z[:, :-4], z[:, 4:]
    r = np.corrcoef(z.ravel(), other.ravel())[0, 1]
    assert abs(r) < 4 / math.sqrt(z.size)
    assert not np.array_equal(z, other)
