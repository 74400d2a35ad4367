"""EnvConfig from YAML: bad fields give one-line ConfigErrors naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from env_testlib import small_cfg

from cachetuner.env import CacheTuningEnv, EnvConfig
from cachetuner.errors import ConfigError


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "exp.yaml"
    p.write_text(text)
    return p


def test_yaml_roundtrip(tmp_path: Path) -> None:
    p = _write(tmp_path, "env:\n  interval_s: 30\n  reward: {kind: seed}\n  actions: {space: discrete12}\n")
    cfg = EnvConfig.from_yaml(p, key="env")
    assert cfg.interval_s == 30 and cfg.reward.kind == "seed" and cfg.actions.space == "discrete12"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("env:\n  reward: {miss_cost: -1}\n", "env.reward.miss_cost"),
        ("env:\n  reward: {kind: profit}\n", "env.reward.kind"),
        ("env:\n  actions: {policies: [allkeys-lru, lru]}\n", "env.actions.policies.1"),
        ("env:\n  whatif: {rate: 2}\n", "env.whatif.rate"),
        ("env:\n  episode_intervalz: 3\n", "env.episode_intervalz"),
        ("env:\n  workloads: [{trace: synthetic:zipf, weight: 0}]\n", "env.workloads.0.weight"),
    ],
)
def test_bad_field_one_line_error(tmp_path: Path, text: str, field: str) -> None:
    p = _write(tmp_path, text)
    with pytest.raises(ConfigError) as e:
        EnvConfig.from_yaml(p, key="env")
    msg = str(e.value)
    assert "\n" not in msg
    assert str(p) in msg and f"'{field}'" in msg


def test_missing_section_and_bad_bounds(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="field 'env': missing section"):
        EnvConfig.from_yaml(_write(tmp_path, "ppo: {}\n"), key="env")
    with pytest.raises(ConfigError, match="bounds"):
        EnvConfig.from_yaml(_write(tmp_path, "bounds: {min_fraction: 0.5, max_fraction: 0.1}\n"))


def test_section_errors_name_the_section_field(tmp_path: Path) -> None:
    """A check across fields of a section names the section itself, in the one-line form."""
    p = _write(tmp_path, "env:\n  observation: {mrc_features: true}\n  mrc: {enabled: false}\n")
    with pytest.raises(ConfigError) as e:
        EnvConfig.from_yaml(p, key="env")
    assert str(e.value) == f"{p}: field 'env': observation.mrc_features needs mrc.enabled"


def test_unknown_workload_reported() -> None:
    with pytest.raises(ConfigError, match="unknown workload 'nope'"):
        env = CacheTuningEnv(small_cfg())
        env.reset(seed=0, options={"workload": "nope"})
    with pytest.raises(ConfigError, match="reset options"):
        CacheTuningEnv(small_cfg()).reset(options={"window": 3})


def test_too_short_trace_for_warmup() -> None:
    cfg = small_cfg(warmup_intervals=40)
    with pytest.raises(ConfigError, match="warmup_intervals"):
        CacheTuningEnv(cfg).reset(seed=0)


def test_unknown_trace_names_the_workload_field() -> None:
    with pytest.raises(ConfigError, match=r"env\.workloads\.1\.trace \(synthetic:nope\): .*valid"):
        CacheTuningEnv(small_cfg(workloads=[{"trace": "synthetic:zipf", "params": {"n_keys": 100, "n_requests": 1000}},
                                            {"trace": "synthetic:nope"}]))


def test_reward_charges_each_tenant_breach_by_its_weight() -> None:
    """reward.tenant_slo: a gold breach costs weight x slo_penalty even when the cache-wide p95 is fine."""
    from cachetuner.env.config import RewardConfig
    from cachetuner.env.reward import interval_cost
    from cachetuner.metrics import MetricsSnapshot, TenantMetrics

    rw = RewardConfig.model_validate({"slo_penalty": 10.0, "memory_cost_per_gb_hour": 0.0, "miss_cost": 1.0,
                                      "tenant_slo": {"gold": {"p95_ms": 80, "weight": 3}, "bronze": {"p95_ms": 200}}})
    tenants = {"gold": TenantMetrics(gets=100, hits=50, latency_p95_ms=95.0),
               "bronze": TenantMetrics(gets=100, hits=20, latency_p95_ms=250.0)}
    snap = MetricsSnapshot(interval_s=10.0, gets=200, hits=70, misses=130, latency_p95_ms=120.0, tenants=tenants)
    cost = interval_cost(snap, changed=False, cfg=rw, slo_p95_ms=150.0)
    assert cost["slo"] == 3 * 10.0 + 1 * 10.0 and cost["miss"] == 130.0
    assert interval_cost(snap, changed=False, cfg=RewardConfig(slo_penalty=10.0), slo_p95_ms=150.0)["slo"] == 0.0


def test_a_trace_shorter_than_the_warmup_says_how_long_it_is_and_what_to_change() -> None:
    """A short real trace at the default rate (LIRS-sized: 2,000 requests = 2 s) is one line naming the workload,
    its span, what the env needs and the knobs that fix it: a user runs into it with `evaluate --trace`."""
    cfg = EnvConfig.model_validate({"workloads": [{"trace": "synthetic:zipf", "params": {"n_requests": 2000, "n_keys": 100,
                                                                                       "rate": 1000}}],
                                    "interval_s": 60, "warmup_intervals": 5})
    env = CacheTuningEnv(cfg)
    with pytest.raises(ConfigError, match=r"spans 2(\.\d+)? s, shorter than warmup_intervals \+ 1 \(6 x 60 s = 360 s\); "
                                          r"a lower --rate stretches") as e:
        env.reset(seed=0)
    assert "\n" not in str(e.value)
