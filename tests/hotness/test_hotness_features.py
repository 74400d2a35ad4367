"""HotnessFeatures around the simulated env: check_env, feature ranges, no Triton needed."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

from cachetuner.backend import RequestSample
from cachetuner.env import EnvConfig, WorkloadSpec, make_sim_env
from cachetuner.hotness_model.features import (
    FEATURE_NAMES,
    HotnessFeatures,
    KeyHistory,
    coverage_bytes,
    jaccard_distance,
)
from cachetuner.hotness_model.model import HotnessLSTM, LSTMConfig
from cachetuner.hotness_model.predictor import InProcessPredictor


def small_env():
    cfg = EnvConfig(
        workloads=[WorkloadSpec(trace="synthetic:zipf", params={"n_requests": 40000, "n_keys": 4000, "rate": 100.0})],
        interval_s=10.0, episode_intervals=12, warmup_intervals=1, whatif={"enabled": False},
    )
    return make_sim_env(cfg)


@pytest.fixture(scope="module")
def predictor() -> InProcessPredictor:
    """An LSTM whose head is zeroed and skip set to 1: it predicts the mean log-count of the history."""
    torch.manual_seed(0)
    model = HotnessLSTM(LSTMConfig(seq_len=16, hidden=8, layers=1))
    with torch.no_grad():
        model.head.weight.zero_()
        model.head.bias.zero_()
        model.skip.weight.fill_(1.0)
        model.skip.bias.zero_()
    return InProcessPredictor(model, device="cpu")


@pytest.mark.filterwarnings("ignore:.*is different from the unwrapped version")  # the wrapper is what is checked
def test_wrapper_passes_check_env(predictor) -> None:
    env = HotnessFeatures(small_env(), predictor, max_keys=256)
    check_env(env, skip_render_check=True)


def test_features_extend_the_observation(predictor) -> None:
    base = small_env()
    n = base.observation_space.shape[0]
    env = HotnessFeatures(base, predictor, max_keys=256)
    assert env.observation_space.shape == (n + 4,)
    obs, info = env.reset(seed=1)
    assert obs.shape == (n + 4,) and set(info["hotness"]) == set(FEATURE_NAMES)
    churns = []
    for _ in range(6):
        obs, _, _, _, info = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs)
        assert 0 < info["hotness"]["hot_bytes_p80"] <= info["hotness"]["hot_bytes_p90"] <= info["hotness"]["hot_bytes_p99"]
        churns.append(info["hotness"]["hot_churn"])
        assert len(env.history.keys) <= 256
    assert all(0 <= c <= 1 for c in churns)


def test_key_history_shifts_and_bounds() -> None:
    h = KeyHistory(seq_len=4, max_keys=2)
    h.push(RequestSample(keys=np.array([5, 5, 7]), sizes=np.array([10, 11, 20]), rate=1.0))
    np.testing.assert_array_equal(h.keys, [5, 7])
    np.testing.assert_array_equal(h.counts[:, -1], [2, 1])
    assert h.sizes.tolist() == [11, 20]  # last seen size
    h.push(RequestSample(keys=np.array([9, 9, 9]), sizes=np.array([1, 1, 1]), rate=0.5))
    assert h.keys.tolist() == [5, 9]  # 7 (least accessed) dropped beyond max_keys
    np.testing.assert_array_equal(h.counts[0], [0, 0, 2, 0])
    np.testing.assert_array_equal(h.counts[1], [0, 0, 0, 6])  # scaled by 1/rate


def test_coverage_and_jaccard() -> None:
    pred = np.array([8.0, 1.0, 1.0, 0.0])
    sizes = np.array([100.0, 10.0, 10.0, 1000.0])
    assert coverage_bytes(pred, sizes, (0.8, 0.9, 0.99)) == [100.0, 110.0, 120.0]
    assert jaccard_distance(np.array([1, 2]), np.array([2, 3])) == pytest.approx(2 / 3)
