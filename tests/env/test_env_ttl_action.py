"""The client-side TTL multiplier: action dimension, ClientTTL state, sim backend, observation, refusal."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from env_testlib import small_cfg
from gymnasium.utils.env_checker import check_env

from cachetuner.backend import ApplyResult, BackendFacts, RequestSample
from cachetuner.config import REDIS_PARAM_NAMES, RedisConfig
from cachetuner.env import CacheTuningEnv, EnvConfig, SimBackend
from cachetuner.env.actions import make_action_codec
from cachetuner.env.ttl_grid import class_grid, hold_episode
from cachetuner.errors import ConfigError
from cachetuner.metrics import MetricsSnapshot
from cachetuner.ttl import simulate_ttl
from cachetuner.ttl.knobs import ClientTTL, ClientTTLBackend
from cachetuner.yamlconfig import validate

TTL = {"ttl_multipliers": [0.25, 1.0, 4.0]}


@pytest.fixture(scope="module")
def tenants_yaml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two tenants (gold, bronze), 10 minutes, small key spaces, frequent source updates."""
    zipf = {"n_requests": 12_000, "alpha": 1.0, "sizes": "lognormal:1024,0.3"}
    w = {
        "name": "tiny", "duration_s": 600,
        "freshness": {"volatile_share": 1.0, "update_every_s": 60, "seed": 0},
        "tenants": [
            {"name": "g", "qos": "gold", "trace": "synthetic:zipf", "rate": 20, "seed": 1, "n_biz": 4,
             "params": {**zipf, "n_keys": 300}},
            {"name": "b", "qos": "bronze", "trace": "synthetic:zipf", "rate": 20, "seed": 2, "n_biz": 4,
             "params": {**zipf, "n_keys": 1500}},
        ],
    }  # fmt: skip
    p = tmp_path_factory.mktemp("tenants") / "tiny.yaml"
    p.write_text(yaml.safe_dump(w))
    return p


def tenant_cfg(path: Path, **overrides: Any) -> EnvConfig:
    data: dict[str, Any] = {
        "workloads": [{"trace": str(path), "format": "tenants", "ttl": "fixed:30", "name": "tiny"}],
        "interval_s": 60, "episode_intervals": 7, "warmup_intervals": 2,
        "bounds": {"initial_fraction": 1.0}, "whatif": {"enabled": False},
    }  # fmt: skip
    data.update(overrides)
    return EnvConfig.model_validate(data)


def test_off_by_default_keeps_shapes() -> None:
    base = CacheTuningEnv(small_cfg())
    assert not base.cfg.actions.ttl_enabled and base.cfg.client_ttl.identity
    assert base.action_space.shape == (3,) and base.observation_space.shape == (38,)
    assert not any(n.startswith("ttl") for n in base.observation_names)
    _obs, info = base.reset(seed=0)
    assert info["client_ttl"] == ClientTTL()
    on = CacheTuningEnv(small_cfg(actions=TTL))
    assert on.action_space.shape == (4,) and on.observation_space.shape == (39,)
    assert on.observation_names[:-1] == base.observation_names and on.observation_names[-1] == "ttl_multiplier"
    per = CacheTuningEnv(small_cfg(actions={**TTL, "ttl_classes": ["gold", "bronze"]}))
    assert list(per.action_space.nvec) == [5, 8, 3, 3, 3]
    assert per.observation_names[-2:] == ["ttl_multiplier:gold", "ttl_multiplier:bronze"]
    assert CacheTuningEnv(small_cfg(), actions="discrete12").action_space.n == 12


def test_action_decodes_to_multiplier_never_to_redis_config() -> None:
    cfg = small_cfg(actions={**TTL, "ttl_classes": ["gold", "bronze"]})
    codec = make_action_codec(cfg.actions)
    cur = RedisConfig(maxmemory=10_000_000)
    plain = make_action_codec(small_cfg().actions)
    for a in ([2, 1, 0, 0, 2], [0, 4, 2, 2, 1]):
        assert codec.decode(a, cur, (1, 10**9)) == plain.decode(a[:3], cur, (1, 10**9))
    ttl = codec.decode_ttl([2, 1, 0, 0, 2], ClientTTL(silver=2.0))
    assert ttl == ClientTTL(gold=0.25, silver=2.0, bronze=4.0)
    shared = make_action_codec(small_cfg(actions=TTL).actions)
    assert shared.decode_ttl([2, 1, 0, 2], ClientTTL()) == ClientTTL.shared(4.0)
    assert set(RedisConfig().to_redis()) == set(REDIS_PARAM_NAMES)  # no TTL knob among the CONFIG SET names


def test_env_step_changes_client_ttl_only() -> None:
    env = CacheTuningEnv(small_cfg(actions=TTL))
    applied: list[RedisConfig] = []
    apply = env.backend.apply
    env.backend.apply = lambda c: (applied.append(c), apply(c))[1]  # type: ignore[method-assign]
    env.reset(seed=0)
    before = env.backend.config
    hold = [2, list(env.action_policies).index(before.maxmemory_policy), env.cfg.actions.timeouts.index(before.timeout)]
    obs, _r, _te, _tr, info = env.step([*hold, 2])
    assert applied == [] and env.backend.config == before and info["config"] == before
    assert info["client_ttl"] == ClientTTL.shared(4.0) == env.client_ttl == env.backend.client_ttl
    assert info["cost"]["switch"] == 0.0 and obs[-1] == pytest.approx(1.0)
    obs, *_ = env.step([*hold, 0])
    assert env.client_ttl == ClientTTL.shared(0.25) and obs[-1] == pytest.approx(0.0)
    env.step_config(before)  # None keeps the multipliers in force
    assert env.client_ttl == ClientTTL.shared(0.25)
    check_env(CacheTuningEnv(small_cfg(actions=TTL)), skip_render_check=True)


def test_sim_backend_multiplies_the_next_intervals_ttls_per_class(tenants_yaml: Path) -> None:
    be = SimBackend(tenant_cfg(tenants_yaml))
    be.reset(seed=0, start="begin", warmup=False)
    be.step()
    first = be.recent_requests()
    cls = np.asarray(be.trace.meta["key_tenant"])[first.keys]  # tenant 0 gold, 1 bronze
    assert set(np.unique(first.ttls)) == {45.0, 21.0}  # fixed:30 x QoS factor (gold 1.5, bronze 0.7)
    be.set_client_ttl(ClientTTL(gold=4.0, bronze=0.5))
    be.step()
    nxt = be.recent_requests()
    cls = np.asarray(be.trace.meta["key_tenant"])[nxt.keys]
    assert np.all(nxt.ttls[cls == 0] == 180.0) and np.all(nxt.ttls[cls == 1] == 10.5)
    assert np.all(be.trace.ttls > 0) and set(np.unique(be.trace.ttls)) == {45.0, 21.0}  # the shared trace is untouched


def test_multiplier_changes_expiries_and_stale_share(tenants_yaml: Path) -> None:
    cfg = tenant_cfg(tenants_yaml)
    env = CacheTuningEnv(cfg, SimBackend(cfg, freshness=True))
    short, long = (hold_episode(env, ClientTTL.shared(m), options={"start": "begin"}) for m in (0.25, 8.0))
    assert short["expirations"] > 3 * max(long["expirations"], 1)
    assert long["hit_ratio"] > short["hit_ratio"] + 0.05
    assert long["stale_share"] > short["stale_share"] + 0.05
    assert set(long["tenants"]) == {"g", "b"}


def test_interval_stale_hits_equal_the_whole_replay(tenants_yaml: Path) -> None:
    """No eviction (maxmemory covers the working set): the per-interval bookkeeping must equal
    simulate_ttl's exact after-the-fact count."""
    cfg = tenant_cfg(tenants_yaml, client_ttl={"gold": 2.0, "bronze": 0.5})
    be = SimBackend(cfg)
    be.reset(seed=0, start="begin", warmup=False)
    be.set_client_ttl(cfg.client_ttl)
    got = []
    while not be.exhausted:
        snap = be.step()
        got.append((snap.stale_hits, snap.tenants["g"].stale_hits))
    tenant = np.asarray(be.trace.meta["key_tenant"])[be.trace.keys]
    scaled = be.trace.ttls * np.where(tenant == 0, 2.0, 0.5)
    # simulate_ttl applies the QoS class factors itself: as silver tenants (factor 1) the TTLs stay as given
    same = replace(be.trace, ttls=scaled, meta={**be.trace.meta, "tenant_classes": ["silver", "silver"]})
    run = simulate_ttl(same, "trace", be.config, interval_s=60, params=be.params, max_intervals=len(got))
    assert sum(s.evictions for s in run.snapshots) == 0
    assert [g for g, _ in got] == run.series["stale_hits"].astype(int).tolist()
    assert [g for _, g in got] == run.tenants["g"]["stale_hits"].astype(int).tolist()
    assert sum(g for g, _ in got) > 0


def test_fork_keeps_client_ttl_and_freshness(tenants_yaml: Path) -> None:
    cfg = tenant_cfg(tenants_yaml, actions=TTL)
    env = CacheTuningEnv(cfg)
    env.reset(seed=3, options={"start": "begin"})
    env.step_config(env.backend.config, ClientTTL.shared(4.0))
    fork = env.fork()
    a = env.step_config(env.backend.config)[4]["snapshot"]
    b = fork.step_config(fork.backend.config)[4]["snapshot"]
    assert fork.client_ttl == ClientTTL.shared(4.0) and (a.hits, a.stale_hits) == (b.hits, b.stale_hits)


def test_stale_cost_is_an_explicit_reward_term(tenants_yaml: Path) -> None:
    _o, info = CacheTuningEnv(tenant_cfg(tenants_yaml)).reset(seed=0)
    assert "stale" not in info["cost"]
    env = CacheTuningEnv(tenant_cfg(tenants_yaml, reward={"stale_cost": 2.0}))
    env.reset(seed=0, options={"start": "begin"})
    *_, info = env.step_config(env.backend.config)
    c, snap = info["cost"], info["snapshot"]
    assert snap.stale_hits > 0 and c["stale"] == 2.0 * snap.stale_hits
    assert c["total"] == pytest.approx(c["memory"] + c["miss"] + c["slo"] + c["switch"] + c["stale"])


@pytest.mark.parametrize(
    ("env", "field"),
    [
        ({"actions": {"ttl_multipliers": [0.5, 0]}}, "env.actions.ttl_multipliers"),
        ({"actions": {"ttl_multipliers": [1, 1]}}, "env.actions.ttl_multipliers"),
        ({"actions": {"space": "discrete12", "ttl_multipliers": [1, 2]}}, "env.actions.ttl_multipliers"),
        ({"actions": {"ttl_classes": ["gold"]}}, "env.actions.ttl_classes"),
        ({"actions": {"ttl_multipliers": [1, 2], "ttl_classes": ["platinum"]}}, "env.actions.ttl_classes.0"),
        ({"client_ttl": {"gold": -1}}, "env.client_ttl.gold"),
        ({"client_ttl": {"gold": "inf"}}, "env.client_ttl.gold"),
        ({"reward": {"stale_cost": -1}}, "env.reward.stale_cost"),
        ({"workloads": [{"trace": "synthetic:zipf", "ttl": "forever"}]}, "env.workloads.0.ttl"),
    ],
)
def test_bad_values_give_one_line_errors(env: dict, field: str) -> None:
    with pytest.raises(ConfigError) as e:
        validate(EnvConfig, env, "exp.yaml", prefix="env.")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"exp.yaml: field '{field}'")


class _NoClientTTL:
    """A CacheBackend without the ClientTTLBackend extension (what the live backend is today)."""

    interval_s = 60.0

    def __init__(self) -> None:
        self._config = RedisConfig()

    @property
    def config(self) -> RedisConfig:
        return self._config

    def reset(self, *, seed: int | None = None) -> MetricsSnapshot:
        return MetricsSnapshot(interval_s=60.0, maxmemory=self._config.maxmemory, config=self._config)

    def apply(self, config: RedisConfig) -> ApplyResult:
        self._config = config
        return ApplyResult(ok=True, requested=config, applied=config)

    def step(self) -> MetricsSnapshot:
        return MetricsSnapshot(interval_s=60.0, maxmemory=self._config.maxmemory, config=self._config, requests=1, gets=1)

    def recent_requests(self) -> RequestSample:
        return RequestSample()

    @property
    def exhausted(self) -> bool:
        return False

    def close(self) -> None:
        return None

    def facts(self) -> BackendFacts:
        return BackendFacts(bounds=(1 << 20, 1 << 30))


def test_backend_without_client_ttl_is_refused() -> None:
    assert isinstance(SimBackend(small_cfg()), ClientTTLBackend) and not isinstance(_NoClientTTL(), ClientTTLBackend)
    for cfg, field in (({"actions": TTL}, "env.actions.ttl_multipliers"), ({"client_ttl": {"gold": 2}}, "env.client_ttl")):
        with pytest.raises(ConfigError, match=f"^{field}: _NoClientTTL cannot apply") as e:
            CacheTuningEnv(EnvConfig.model_validate({**cfg, "whatif": {"enabled": False}}), _NoClientTTL())
        assert "\n" not in str(e.value)
    env = CacheTuningEnv(EnvConfig(whatif={"enabled": False}, max_episode_steps=3), _NoClientTTL())
    env.reset(seed=0)
    env.step_config(env.backend.config)  # no client_ttl: fine
    with pytest.raises(ConfigError, match="^client_ttl: "):
        env.step_config(env.backend.config, ClientTTL.shared(2.0))


def test_ppo_controller_applies_the_ttl_part_of_its_action_in_evaluation(tmp_path: Path) -> None:
    """``Controller.decide`` returns a RedisConfig only; the TTL part of a TTL-trained policy's action goes
    through ``client_ttl`` (ClientTTLDecider) and reaches the env in an evaluation episode."""
    from stable_baselines3 import PPO

    from cachetuner.control.base import ClientTTLDecider
    from cachetuner.control.learned import LearnedPolicy, PolicyArtifact
    from cachetuner.control.settings import ControlSettings
    from cachetuner.evaluation.episode import run_episode

    cfg = small_cfg(actions={"ttl_multipliers": [0.25, 4.0]}, whatif={"enabled": False})
    env = CacheTuningEnv(cfg)
    model = PPO("MlpPolicy", env, seed=3, n_steps=16, batch_size=16)
    art = PolicyArtifact("test", tmp_path / "model.zip", model, cfg, cfg, False, False, {})
    ctl = LearnedPolicy(ControlSettings(), model=art)
    assert isinstance(ctl, ClientTTLDecider) and ctl.decides_client_ttl
    codec = make_action_codec(cfg.actions)
    seen: list[tuple[ClientTTL, ClientTTL]] = []
    decide = ctl.decide

    def spy(ctx: Any) -> RedisConfig:
        out = decide(ctx)
        seen.append((codec.decode_ttl(ctl._action, ctx.client_ttl), ctx.client_ttl))
        return out

    ctl.decide = spy  # type: ignore[method-assign]
    records = run_episode(env, ctl, seed=0)
    assert len(records) == len(seen) >= 2
    wanted = [w for w, _ in seen]
    assert all(m in (0.25, 4.0) for t in wanted for m in (t.gold, t.silver, t.bronze))
    assert env.client_ttl == wanted[-1]  # the last decision's multipliers are in force
    assert [cur for _, cur in seen[1:]] == wanted[:-1]  # each interval ran the previous decision's

    # the daemon changes Redis only through CONFIG SET: such a policy is refused, not half-applied
    from cachetuner.daemon.config import DaemonConfig
    from cachetuner.daemon.policy import make_policy

    model.save(tmp_path / "model.zip")
    (tmp_path / "train_config.yaml").write_text(yaml.safe_dump({"env": cfg.model_dump(mode="json"), "price_features": False}))
    bounds = {"maxmemory_min": 1 << 20, "maxmemory_max": 1 << 26, "policies": ["allkeys-lru"], "timeouts": [0]}
    dcfg = DaemonConfig.model_validate({
        "state_dir": str(tmp_path / "state"), "tracking": {"enabled": False},
        "policy": {"name": "ppo", "model": str(tmp_path / "model.zip")},
        "targets": [{"name": "t", "backend": "sim", "bounds": bounds}],
    })
    with pytest.raises(ConfigError, match="^policy: .*CONFIG SET") as e:
        make_policy(dcfg, dcfg.targets[0], lambda: None)
    assert "\n" not in str(e.value)


def test_class_grid() -> None:
    g = class_grid([0.5, 2.0], ["gold", "bronze"])
    assert len(g) == 4 and ClientTTL(gold=0.5, bronze=2.0) in g and all(t.silver == 1.0 for t in g)
