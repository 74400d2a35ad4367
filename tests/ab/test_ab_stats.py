"""Statistics of the A/B harness: calibration on autocorrelated noise, power, verdict rules, peeking guard."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cachetuner.ab.stats import (
    BETTER,
    INCONCLUSIVE,
    NO_DIFFERENCE,
    WORSE,
    auto_block_len,
    bootstrap_ci,
    compare,
    msprt_ci,
)


def ar1(n: int, phi: float, rng: np.random.Generator) -> np.ndarray:
    e = rng.normal(size=n)
    x = np.empty(n)
    x[0] = e[0] / np.sqrt(1 - phi**2)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return x


@pytest.mark.parametrize("phi", [0.0, 0.5])
def test_block_bootstrap_false_positive_rate_on_aa_noise(phi: float) -> None:
    """A/A: zero-mean AR(1) differences; the 95% CI must exclude 0 in about 5% of runs, not 15-25%
    as a percentile bootstrap on single intervals does (documented rates in docs/ab.md)."""
    rng = np.random.default_rng(123)
    reps = 200
    hits = sum(bootstrap_ci(ar1(120, phi, rng), n_resamples=500, seed=r).excludes_zero for r in range(reps))
    assert hits / reps <= 0.12


def test_block_bootstrap_detects_a_real_shift() -> None:
    rng = np.random.default_rng(5)
    detected = sum(bootstrap_ci(ar1(120, 0.5, rng) + 0.8, n_resamples=500, seed=r).ci[0] > 0 for r in range(50))
    assert detected >= 45


def test_block_length_grows_with_autocorrelation() -> None:
    rng = np.random.default_rng(0)
    assert auto_block_len(ar1(600, 0.0, rng)) <= 3
    assert auto_block_len(ar1(600, 0.8, rng)) >= 8


def test_bootstrap_is_seeded() -> None:
    d = np.random.default_rng(1).normal(size=80)
    assert bootstrap_ci(d, seed=3).ci == bootstrap_ci(d, seed=3).ci


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=6, max_size=60), st.floats(-100, 100))
def test_ci_contains_the_mean_and_is_translation_equivariant(xs: list[float], shift: float) -> None:
    d = np.array(xs)
    a = bootstrap_ci(d, n_resamples=200, seed=0)
    b = bootstrap_ci(d + shift, n_resamples=200, seed=0)
    assert a.ci[0] - 1e-9 <= a.mean <= a.ci[1] + 1e-9
    assert b.mean == pytest.approx(a.mean + shift, abs=1e-6)
    assert b.ci[0] == pytest.approx(a.ci[0] + shift, abs=1e-6)


def _arms(delta: float, n: int = 100, seed: int = 0) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    base = 1.0 + 0.1 * rng.normal(size=n)
    noise = ar1(n, 0.3, rng) * 0.02
    control = {"cost": base, "hit_ratio": 0.5 + 0 * base}
    treatment = {"cost": base + delta + noise, "hit_ratio": 0.5 - delta + 0 * base}
    return control, treatment


def test_verdict_direction_follows_the_metric() -> None:
    c, t = _arms(-0.05)
    assert compare(c, t, primary_metric="cost", horizon=100).verdict == BETTER  # cheaper is better
    c, t = _arms(+0.05)
    assert compare(c, t, primary_metric="cost", horizon=100).verdict == WORSE
    c, t = _arms(+0.05)
    v = compare(c, t, primary_metric="hit_ratio", horizon=100)
    assert v.verdict == WORSE and v.deltas["hit_ratio"].mean == pytest.approx(-5.0)  # percentage points


def test_identical_arms_have_no_significant_difference() -> None:
    c, _ = _arms(0.0)
    v = compare(c, {k: x.copy() for k, x in c.items()}, primary_metric="cost", horizon=100)
    assert v.verdict == NO_DIFFERENCE
    assert v.deltas["cost"].ci == (0.0, 0.0)


def test_fixed_horizon_refuses_an_early_verdict() -> None:
    c, t = _arms(-0.5)
    early = compare({k: x[:30] for k, x in c.items()}, {k: x[:30] for k, x in t.items()}, horizon=100)
    assert early.verdict == INCONCLUSIVE
    assert early.deltas["cost"].ci[1] < 0  # the data say better; peeking must not
    assert compare(c, t, horizon=100).verdict == BETTER


def test_msprt_stops_early_on_a_large_effect_and_rarely_on_noise() -> None:
    c, t = _arms(-0.5)
    early = compare({k: x[:60] for k, x in c.items()}, {k: x[:60] for k, x in t.items()}, horizon=200,
                    method="msprt")
    assert early.verdict == BETTER and early.deltas["cost"].stopped_at is not None
    rng = np.random.default_rng(9)
    false = sum(msprt_ci(ar1(150, 0.5, rng)).excludes_zero for _ in range(200))
    assert false / 200 <= 0.08
    c, t = _arms(0.0)
    assert compare(c, t, horizon=200, method="msprt").verdict == INCONCLUSIVE
