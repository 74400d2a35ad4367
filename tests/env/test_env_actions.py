"""Actions decode to bounded, valid configs; step_config clips like actions do."""

from __future__ import annotations

import itertools

import numpy as np
from env_testlib import small_cfg
from hypothesis import given, settings
from hypothesis import strategies as st

from cachetuner.config import RedisConfig
from cachetuner.env import CacheTuningEnv
from cachetuner.env.actions import Discrete12Codec, MultiDiscreteCodec, move_memory
from cachetuner.env.config import DISCRETE12_POLICIES, ActionConfig

BOUNDS = (1_000_000, 50_000_000)


@settings(max_examples=200, deadline=None)
@given(
    current=st.integers(min_value=0, max_value=10**11),
    mem=st.integers(0, 4),
    pol=st.integers(0, 7),
    tmo=st.integers(0, 2),
)
def test_multidiscrete_decode_respects_bounds(current: int, mem: int, pol: int, tmo: int) -> None:
    codec = MultiDiscreteCodec(ActionConfig())
    cfg = codec.decode(np.array([mem, pol, tmo]), RedisConfig(maxmemory=current), BOUNDS)
    assert BOUNDS[0] <= cfg.maxmemory <= BOUNDS[1]
    assert cfg.maxmemory_policy == ActionConfig().policies[pol]
    assert cfg.timeout == ActionConfig().timeouts[tmo]


def test_discrete12_is_3_moves_by_4_policies() -> None:
    codec = Discrete12Codec(ActionConfig(space="discrete12"))
    cur = RedisConfig(maxmemory=10_000_000, timeout=30)
    seen = set()
    for a in range(12):
        cfg = codec.decode(a, cur, BOUNDS)
        move, pol = divmod(a, 4)
        assert cfg.maxmemory == round(10_000_000 * (1 + (-0.25, 0.0, 0.25)[move]))
        assert cfg.maxmemory_policy == DISCRETE12_POLICIES[pol]
        assert cfg.timeout == 30
        seen.add((cfg.maxmemory, cfg.maxmemory_policy))
    assert len(seen) == 12


def test_optional_dimensions_extend_multidiscrete() -> None:
    ac = ActionConfig(samples=[3, 5, 10], lfu_log_factors=[1, 10], lfu_decay_times=[1, 5])
    codec = MultiDiscreteCodec(ac)
    assert list(codec.space.nvec) == [5, 8, 3, 3, 2, 2]
    cfg = codec.decode(np.array([2, 2, 0, 2, 0, 1]), RedisConfig(maxmemory=5_000_000), BOUNDS)
    assert (cfg.maxmemory_samples, cfg.lfu_log_factor, cfg.lfu_decay_time) == (10, 1, 5)


def test_env_decode_every_action_within_episode_bounds() -> None:
    env = CacheTuningEnv(small_cfg())
    env.reset(seed=0)
    lo, hi = env.bounds
    for action in itertools.product(range(5), range(8), range(3)):
        cfg = env.decode_action(np.array(action))
        assert lo <= cfg.maxmemory <= hi
    # push to both ends: repeated +30 % / -30 % saturate exactly at the bounds
    for mem, end in ((4, hi), (0, lo)):
        for _ in range(40):
            env.step(np.array([mem, 1, 0]))
            if env.backend.exhausted:
                env.reset(seed=0)
                env.step_config(env.backend.config.evolve(maxmemory=end))
        assert env.backend.config.maxmemory == end


def test_step_config_clips_out_of_bounds() -> None:
    env = CacheTuningEnv(small_cfg())
    env.reset(seed=0)
    lo, hi = env.bounds
    *_, info = env.step_config(RedisConfig(maxmemory=10**14, timeout=10**6, maxmemory_policy="allkeys-lfu"))
    assert info["config"].maxmemory == hi and info["config"].timeout == 300
    assert info["config"].maxmemory_policy == "allkeys-lfu"
    *_, info = env.step_config(RedisConfig(maxmemory=1))
    assert info["config"].maxmemory == lo and info["snapshot"].maxmemory == lo


def test_move_memory_clips_current_first() -> None:
    assert move_memory(10**12, 0.0, BOUNDS) == BOUNDS[1]
    assert move_memory(0, 0.3, BOUNDS) == round(BOUNDS[0] * 1.3)
