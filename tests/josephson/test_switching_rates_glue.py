"""``switching_currents(method="rates")`` with the real :func:`escape_rates` (issue 18, part 1).

The rates method and the direct simulation of the same slow ramp must give the same
switching-current distribution; both count escape at the next well from the thermal state.
"""

import math

import numpy as np
import pytest
from scipy import stats

import gpuensembles as ge

# overdamped, theta = 0.1, gamma_dot = 2.5e-5: switching near gamma = 0.55 where Delta U ~ 3 theta,
# epsilon ~ 4e-3 (adiabatic); the direct ramp takes ~7e5 steps per realization
CASE = dict(V0=1.0, damping=1.0, D=0.1, h=0.02, model="overdamped", seed=18)
DGAMMA = 5e-7


@pytest.mark.slow
def test_rates_method_agrees_with_the_direct_ramp():
    # rel_error 0.15: the rate curve's cost grows as 1 / rel_error^2 (0.1 took 3.8e8 steps, 60% of the test)
    rates = ge.switching_currents(dgamma=DGAMMA, realizations=4000, method="rates", rel_error=0.15, backend="cpu",
                                  progress=False, **CASE)
    assert rates.rate.size <= 64 and np.all(rates.rate_stderr / rates.rate < 0.2)
    assert float(rates.adiabaticity.max()) < 0.01
    # the direct ramp starts from the thermal state where the computed distribution is 1e-4: what
    # switches before that is beyond the resolution of 400 samples
    start = float(np.interp(1e-4, rates.cdf.values, rates.bias.values))
    direct = ge.switching_currents(dgamma=DGAMMA, realizations=400, passage="next_well", start="thermal",
                                   gamma_start=start, backend="cpu", progress=False, **CASE)
    assert direct.switched.all()
    # two-sample KS at level 1e-4 (the rates samples carry the rates' error too: 15% in Gamma moves the
    # CDF by at most 0.15 (1 - P) E ~ 0.06, below the KS resolution of 400 samples at that level, 0.12)
    result = stats.ks_2samp(rates.switching_current.values, direct.switching_current.values)
    assert result.pvalue > 1e-4, result
    # and the direct sample against the computed CDF itself
    cdf = lambda x: np.interp(x, rates.bias.values, rates.cdf.values)
    assert stats.kstest(direct.switching_current.values, cdf).pvalue > 1e-4


#: Seeds of the coverage test below (each one rate curve, ~3 s of CI).
SEEDS = 30


@pytest.mark.slow
@pytest.mark.parametrize("rel_error", [0.5, 0.25])
def test_rates_method_errors_cover_the_many_seed_mean(rel_error):
    """Over SEEDS seeds the stated 95% interval of the mean switching current covers the many-seed mean
    as often as it claims (at least the binomial 1% quantile of SEEDS trials at 95%: 25 of 30), and the
    stated error is the spread of the means (within 4 standard errors of the log of a standard deviation
    of SEEDS values, 1 / sqrt(2 (SEEDS - 1)): a factor 1.69 at 30). With 20,000 samples the rate curve's
    error dominates: the samples' error alone covers far less, as it did before the curve's part was
    added (issue 40)."""
    rows = []
    for seed in range(SEEDS):
        ds = ge.switching_currents(dgamma=2e-7, realizations=20_000, method="rates", rel_error=rel_error,
                                   backend="cpu", progress=False, **{**CASE, "seed": 100 + seed})
        stats_ = ds.fpt.mean()
        rows.append([float(stats_["mean"]), float(stats_["stderr"]), float(stats_["sample_stderr"])])
    mean, stderr, sample = np.array(rows).T
    truth = mean.mean()
    inside = np.abs(mean - truth) <= 1.96 * stderr
    assert inside.sum() >= stats.binom.ppf(0.01, SEEDS, 0.95), inside.sum()  # counts: no rounding at the bound
    covered = inside.mean()
    band = 4 / math.sqrt(2 * (SEEDS - 1))
    ratio = np.median(stderr) / mean.std(ddof=1)
    assert math.exp(-band) < ratio < math.exp(band), ratio
    assert np.mean(np.abs(mean - truth) <= 1.96 * sample) < min(covered, 0.8)
