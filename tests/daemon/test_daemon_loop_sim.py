"""The daemon loop end to end on simulator-backed targets (no Redis needed): adversarial policies never
get an out-of-bounds config applied, dry-run applies nothing, rollbacks, staged rollout, env-based
baselines, reconciliation of a half-done apply, HTTP endpoints, MLflow run, SIGTERM of the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from cachetuner.config import REDIS_POLICIES, RedisConfig
from cachetuner.daemon.audit import read_audit
from cachetuner.daemon.config import DaemonConfig
from cachetuner.daemon.guardrails import bounds_violations
from cachetuner.daemon.loop import Daemon
from cachetuner.daemon.policy import PolicyInput
from cachetuner.errors import ConfigError

MB = 1_000_000
ENV = {
    "workloads": [{"trace": "synthetic:zipf", "params": {"n_requests": 60000, "n_keys": 5000, "rate": 1000, "alpha": 1.0}}],
    "interval_s": 5,
    "episode_intervals": None,
    "warmup_intervals": 0,
    "bounds": {"min_bytes": 1 * MB, "max_bytes": 64 * MB, "initial_bytes": 24 * MB},
    "whatif": {"enabled": False},
}
BOUNDS = {"maxmemory_min": 8 * MB, "maxmemory_max": 40 * MB, "policies": ["allkeys-lru", "allkeys-lfu"], "timeouts": [0, 300]}


def make_cfg(tmp_path: Path, n_targets: int = 1, **over: Any) -> DaemonConfig:
    targets = [
        {"name": f"t{i}", "backend": "sim", "bounds": BOUNDS, "backend_options": {"env": ENV}, **over.pop("target", {})}
        for i in range(n_targets)
    ]
    d: dict[str, Any] = {
        "interval_s": 0.001,
        "state_dir": str(tmp_path / "state"),
        "http": {"port": 0},
        "tracking": {"enabled": False},
        "policy": {"name": "random", "seed": 3},
        "max_iterations": 30,
        "targets": targets,
        **over,
    }
    return DaemonConfig.model_validate(d)


class EvilPolicy:
    """Proposals designed to break things: unlimited memory, 1 byte, forbidden policies and timeouts."""

    name = "evil"

    def __init__(self) -> None:
        self.i = 0

    def decide(self, obs: PolicyInput) -> RedisConfig:
        self.i += 1
        choices = [
            obs.current.evolve(maxmemory=0),
            obs.current.evolve(maxmemory=1),
            obs.current.evolve(maxmemory=1 << 45),
            obs.current.evolve(maxmemory_policy=REDIS_POLICIES[self.i % 8]),
            obs.current.evolve(timeout=86400),
            obs.current.evolve(maxmemory=39 * MB, maxmemory_policy="allkeys-lfu"),
        ]
        return choices[self.i % len(choices)]

    def close(self) -> None:
        pass


def applied_configs(state_dir: Path) -> list[RedisConfig]:
    return [
        RedisConfig(**r["applied"])
        for r in read_audit(state_dir / "audit.jsonl")
        if r.get("phase") == "outcome" and r.get("outcome") == "applied"
    ]


class CheckingBackend:
    """Wraps the real SimBackend and records every config it is asked to apply (the test's eyes on CONFIG SET)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.requests: list[RedisConfig] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def config(self) -> RedisConfig:
        return self.inner.config

    def apply(self, config: RedisConfig) -> Any:
        self.requests.append(config)
        return self.inner.apply(config)


def spy(d: Daemon) -> list[CheckingBackend]:
    spies = []
    for r in d.runners:
        factory = r.backend_factory
        box: list[CheckingBackend] = []

        def make(factory: Any = factory, box: list[CheckingBackend] = box) -> Any:
            box.append(CheckingBackend(factory()))
            return box[0]

        r.backend_factory = make
        spies.append(box)
    return spies  # type: ignore[return-value]


@pytest.mark.parametrize("policy", ["random", "evil"])
@pytest.mark.parametrize("guards", [None, ["stale", "slo"]])
def test_adversarial_policies_never_apply_out_of_bounds(tmp_path: Path, policy: str, guards: list[str] | None) -> None:
    """With the full chain or with the bounds guards removed from the config, nothing out of bounds
    ever reaches backend.apply: the final pre-apply check refuses it (defence in depth)."""
    over: dict[str, Any] = {"max_iterations": 40}
    if guards is not None:
        over["target"] = {"guards": guards, "max_relative_change": 100.0}
    cfg = make_cfg(tmp_path, **over)
    d = Daemon(cfg)
    if policy == "evil":
        d.runners[0].policy = EvilPolicy()
    boxes = spy(d)
    assert d.run() == 0
    sent = boxes[0][0].requests  # type: ignore[index]
    recs = read_audit(cfg.audit_path)
    b = cfg.targets[0].bounds
    assert sent, "the policy should have got some changes through"
    assert all(not bounds_violations(c, b) for c in sent)
    assert all(not bounds_violations(c, b) for c in applied_configs(Path(cfg.state_dir)))
    vetoes = {r["verdict"]["vetoed_by"] for r in recs if r.get("action") == "veto"}
    if guards is None:
        assert "bounds" in vetoes
    else:
        assert "final_bounds" in vetoes  # nothing in the chain stopped it; the last check did
    assert recs[-1]["event"] == "stop"


def test_dry_run_never_applies(tmp_path: Path) -> None:
    cfg = make_cfg(tmp_path, dry_run=True, max_iterations=15)
    d = Daemon(cfg)
    boxes = spy(d)
    initial = None
    d.run()
    backend = boxes[0][0]  # type: ignore[index]
    assert backend.requests == []
    recs = read_audit(cfg.audit_path)
    assert not [r for r in recs if r.get("phase") in ("intent", "outcome")]
    dry = [r for r in recs if r.get("action") == "dry_run"]
    assert dry and all(r["dry_run"] and r["to_apply"] for r in dry)
    assert initial is None


class Shrinker:
    """Shrinks to the lower bound once, after a few intervals: breaks the hit-ratio SLO."""

    name = "shrinker"

    def __init__(self) -> None:
        self.n = 0

    def decide(self, obs: PolicyInput) -> RedisConfig:
        self.n += 1
        return obs.current.evolve(maxmemory=1 * MB) if self.n == 4 else obs.current

    def close(self) -> None:
        pass


def test_rollback_to_last_known_good_within_one_interval(tmp_path: Path) -> None:
    target = {
        "bounds": {**BOUNDS, "maxmemory_min": 1 * MB},
        "slo": {"min_hit_ratio": 0.5},
        "max_relative_change": 1.0,
    }
    cfg = make_cfg(tmp_path, target=target, max_iterations=10)
    d = Daemon(cfg)
    d.runners[0].policy = Shrinker()
    d.run()
    recs = read_audit(cfg.audit_path)
    change = next(r for r in recs if r.get("phase") == "intent" and r["action"] == "change")
    rb = next(r for r in recs if r.get("phase") == "intent" and r["action"] == "rollback")
    assert rb["iteration"] == change["iteration"] + 1  # the very next interval's metrics triggered it
    assert rb["to_apply"]["maxmemory"] == 24 * MB  # back to the known-good size
    assert "hit ratio" in rb["reason"]
    st = json.loads(cfg.state_path.read_text())
    assert st["targets"]["t0"]["last_known_good"]["maxmemory"] == 24 * MB


class Grower:
    name = "grower"

    def decide(self, obs: PolicyInput) -> RedisConfig:
        return obs.current.evolve(maxmemory=min(obs.current.maxmemory + 2 * MB, 40 * MB))

    def close(self) -> None:
        pass


def test_staged_rollout_promotes_after_good_intervals(tmp_path: Path) -> None:
    cfg = make_cfg(
        tmp_path,
        n_targets=3,
        rollout={"mode": "staged", "canary": "t1", "promote_after": 3},
        target={"cooldown_s": 0.0},
        max_iterations=12,
    )
    d = Daemon(cfg)
    canary = next(r for r in d.runners if r.name == "t1")
    assert canary.policy is not None and all(r.policy is None for r in d.runners if r is not canary)
    canary.policy = Grower()
    d.run()
    recs = read_audit(cfg.audit_path)
    canary_changes = [r for r in recs if r.get("phase") == "intent" and r["target"] == "t1"]
    promotions = [r for r in recs if r.get("phase") == "intent" and r["action"] == "promote"]
    assert canary_changes and promotions
    assert {r["target"] for r in promotions} == {"t0", "t2"}
    first = min(r["iteration"] for r in promotions)
    # promoted only after the canary's config had passed the SLO for 3 consecutive intervals
    last_canary_change_before = max(r["iteration"] for r in canary_changes if r["iteration"] < first)
    assert first - last_canary_change_before >= 3
    for p in promotions:
        canary_cfgs = {json.dumps(r["to_apply"], sort_keys=True) for r in canary_changes}
        assert json.dumps(p["to_apply"], sort_keys=True) in canary_cfgs


@pytest.mark.parametrize("name", ["static-default", "hill-climb", "mrc"])
def test_env_based_baselines_run_through_the_guardrails(tmp_path: Path, name: str) -> None:
    env = {**ENV, "whatif": {"enabled": True, "min_keys": 500}}
    cfg = make_cfg(tmp_path, policy={"name": name}, target={"backend_options": {"env": env}}, max_iterations=12)
    d = Daemon(cfg)
    d.run()
    recs = read_audit(cfg.audit_path)
    decided = [r for r in recs if r.get("phase") in ("decision", "intent")]
    assert len(decided) == 12
    assert not [r for r in decided if r["action"] == "policy_error"], [r["reason"] for r in decided][:3]
    assert all(r["proposal"] is None or RedisConfig(**r["proposal"]) for r in decided)


def test_unknown_and_hindsight_policies_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="valid: .*random"):
        Daemon(make_cfg(tmp_path, policy={"name": "nope"}))
    with pytest.raises(ConfigError, match="cannot run on a live target"):
        Daemon(make_cfg(tmp_path, policy={"name": "oracle"}))
    with pytest.raises(ConfigError, match="policy.history: 'mrc-history' watches the target's past traffic"):
        Daemon(make_cfg(tmp_path, policy={"name": "mrc-history"}))
    with pytest.raises(ConfigError, match="policy.history: only a controller that watches a history uses it"):
        Daemon(make_cfg(tmp_path, policy={"name": "mrc", "history": {"trace": "synthetic:zipf"}}))
    with pytest.raises(ConfigError, match=r"policy.history \(/nope.trace\): /nope.trace: trace file not found"):
        Daemon(make_cfg(tmp_path, policy={"name": "mrc-history", "history": {"trace": "/nope.trace"}}))


def test_mrc_history_watches_the_targets_past_and_starts_at_the_config_sized_on_it(tmp_path: Path) -> None:
    """``policy.history``: before its first decision the curves watch a trace of the target's past traffic (here the
    same Zipf key space), so they carry its evidence; the first proposal is ``cachetuner recommend``'s config on that
    trace at the policy env's prices within the target's bounds (through the fill cap: at most that size)."""
    from cachetuner.env import EnvConfig, WorkloadSpec
    from cachetuner.env.sim_backend import load_workload
    from cachetuner.mrc.config import MRCConfig
    from cachetuner.mrc.recommend import recommend

    history = {"trace": "synthetic:zipf", "params": ENV["workloads"][0]["params"], "limit": 30000}
    evidence = {}
    for name, policy in (("mrc", {"name": "mrc"}),
                         ("mrc-history", {"name": "mrc-history", "history": history, "history_sample_rate": 1.0})):
        cfg = make_cfg(tmp_path / name, policy=policy, max_iterations=4)
        d = Daemon(cfg)
        d.run()
        curves = d.runners[0].policy.env.curves  # type: ignore[union-attr]
        evidence[name] = min(float(e.min()) for e in curves.evidence.values())
    # the GETs the curves account for at their sparsest point: the history's on top of the four live intervals
    assert evidence["mrc-history"] > 2 * evidence["mrc"]
    reward = EnvConfig().reward
    rec = recommend(load_workload(WorkloadSpec(**history)), memory_per_gib_hour=reward.memory_cost_per_gb_hour,
                    per_miss=reward.miss_cost, cfg=MRCConfig(policies=["allkeys-lru", "allkeys-lfu"]), verify=False,
                    bounds=(BOUNDS["maxmemory_min"], BOUNDS["maxmemory_max"]))
    decided = [r for r in read_audit(cfg.audit_path) if r.get("phase") in ("decision", "intent")]
    first = RedisConfig(**decided[0]["proposal"])
    assert first.maxmemory_policy == rec.policy and BOUNDS["maxmemory_min"] <= first.maxmemory <= rec.maxmemory


def test_mrc_resumes_its_curves_and_rule_after_a_restart(tmp_path: Path) -> None:
    """``policy.checkpoint_intervals``: the daemon saves the mrc rule's state and curves to ``state_dir``; a daemon
    restarted with the same policy and bounds goes on from them (the rule keeps counting its intervals, the curves
    keep their evidence) instead of starting its cold phase again; with other bounds it starts cold."""
    def run(iterations: int, **over: Any) -> Any:
        cfg = make_cfg(tmp_path, policy={"name": "mrc", "checkpoint_intervals": 2}, max_iterations=iterations, **over)
        d = Daemon(cfg)
        d.run()
        return d.runners[0].policy

    first = run(6)
    assert (tmp_path / "state" / "policy-t0.pkl").is_file()
    seen = first.controller.decider._seen
    evidence = min(float(e.min()) for e in first.env.curves.evidence.values())
    again = run(2)
    assert again.controller.decider._seen == seen + 2
    assert min(float(e.min()) for e in again.env.curves.evidence.values()) > evidence
    other = run(2, target={"bounds": {**BOUNDS, "maxmemory_max": 30 * MB}})
    assert other.controller.decider._seen == 2
    (tmp_path / "state" / "policy-t0.pkl").write_bytes(b"torn")  # an unreadable file: cold, not a crash
    assert run(1).controller.decider._seen == 1


def test_the_shipped_policy_resumes_its_anchor_after_a_restart(tmp_path: Path) -> None:
    """``ppo`` decides by offsets from its mirror env's anchor (the mrc rule on the same curves), so its checkpoint is
    the anchor's: a restarted daemon goes on with the curves' evidence and the anchor rule's count, past the cold
    phase it had left, instead of handing its first decisions to the anchor's cold-phase bets again."""
    def run(iterations: int) -> Any:
        cfg = make_cfg(tmp_path, policy={"name": "ppo", "model": "default", "checkpoint_intervals": 2},
                       max_iterations=iterations)
        d = Daemon(cfg)
        d.run()
        return d.runners[0].policy

    first = run(12)
    assert (tmp_path / "state" / "policy-t0.pkl").is_file()
    estimator, anchor = first.env.anchor_state()
    seen, evidence = anchor._seen, min(float(e.min()) for e in first.env.curves.evidence.values())
    assert not anchor.cold and first.controller.deferred < 12  # it left the cold phase and decided itself
    assert first.last_info["curves"]["ready"]  # the audit log says when the anchor's curves are ready, as for mrc
    again = run(2)
    assert again.env.anchor_state()[1]._seen == seen + 2
    assert min(float(e.min()) for e in again.env.curves.evidence.values()) > evidence
    assert again.controller.deferred == 0  # no cold phase again: both decisions are the policy's (or young's)


def test_the_audit_says_when_the_policy_handed_a_decision_to_its_anchor(tmp_path: Path) -> None:
    """``policy_info.ppo`` in every decision line: ``handed_to_anchor`` is why the policy ran its anchor's config
    (``cold``, ``young``, ``outside``) or null when it decided itself, beside the anchor's config; the counts match
    the controller's."""
    # memory dear enough that this small cache's price feature lies where the policy was trained (else: "outside")
    cfg = make_cfg(tmp_path, policy={"name": "ppo", "prices": {"preset": "scaled", "memory_per_gib_hour": 20_000.0}},
                   max_iterations=12)
    d = Daemon(cfg)
    d.run()
    c = d.runners[0].policy.controller  # type: ignore[union-attr]
    recs = [r for r in read_audit(cfg.audit_path) if r.get("phase") in ("decision", "intent")]
    why = [r["policy_info"]["ppo"]["handed_to_anchor"] for r in recs]
    assert len(why) == 12 and why[0] == "cold"
    assert (why.count("cold"), why.count("young"), why.count("outside")) == (c.deferred, c.deferred_young,
                                                                              c.deferred_outside)
    assert None in why, str(why)  # past the cold phase it decided itself here
    assert all(r["policy_info"]["ppo"]["anchor"] is not None for r, w in zip(recs, why, strict=True) if w is None)


def test_observe_first_a_dry_run_warms_the_curves_the_tuning_daemon_resumes(tmp_path: Path) -> None:
    """Deploying in two steps: a daemon with ``dry_run: true`` decides and logs but applies nothing, while its curves
    watch the traffic and its checkpoint is written; the tuning daemon started after it (same policy, settings and
    bounds; ``dry_run`` is not part of the checkpoint's key) resumes from that state. Its first decisions are made on
    the curves' evidence, not the cold phase's bets: on the same target a cold daemon grows the operator's 24 MB
    (cold growth to 36 MB, which the fill cap holds at 30 MB while the cache fills; before the cap weighed its memory
    over payback_intervals, 2026-12-04, it went 36, 40, then back to ~23.5 MB), while the resumed one goes on with
    what its curves price, where the dry run left off (~26 MB; it kept 24 MB while the decider priced memory over
    its env config's 60 s instead of the 5 s intervals it measured, before 2026-12-06)."""
    def run(state: str, iterations: int, dry_run: bool) -> tuple[Any, DaemonConfig]:
        cfg = make_cfg(tmp_path / state, policy={"name": "mrc", "checkpoint_intervals": 2}, max_iterations=iterations,
                       dry_run=dry_run)
        d = Daemon(cfg)
        d.run()
        return d.runners[0].policy, cfg

    def changes(cfg: DaemonConfig) -> list[int]:
        return [r["applied"]["maxmemory"] for r in read_audit(cfg.audit_path)
                if r.get("phase") == "outcome" and r.get("outcome") == "applied"]

    observed, cfg = run("s", 24, dry_run=True)
    assert changes(cfg) == [] and (tmp_path / "s" / "state" / "policy-t0.pkl").is_file()
    assert observed.env.curves.ready(observed.controller.decider.settings.min_weight)
    # the audit log tells the operator when the warm-up is done: not ready at first, ready by the end
    ready = [r["policy_info"]["curves"]["ready"] for r in read_audit(cfg.audit_path) if r.get("phase") == "decision"]
    assert len(ready) == 24 and not ready[0] and ready[-1]
    seen = observed.controller.decider._seen
    tuned, cfg = run("s", 3, dry_run=False)
    assert tuned.controller.decider._seen == seen + 3  # resumed, not cold
    _, cold_cfg = run("cold", 3, dry_run=False)
    assert changes(cold_cfg) and max(changes(cold_cfg)) >= 30 * MB  # the cold phase's bets
    dry = [r["proposal"]["maxmemory"] for r in read_audit(tmp_path / "s" / "state" / "audit.jsonl")
           if r.get("phase") == "decision" and r.get("dry_run") and r.get("proposal")]
    assert all(abs(c - dry[-1]) <= 0.05 * dry[-1] for c in changes(cfg)), (changes(cfg), dry[-1])
    assert max(changes(cfg), default=0) < 30 * MB  # no cold bet


def test_restart_reconciles_an_intent_left_open_by_kill9(tmp_path: Path) -> None:
    cfg = make_cfg(tmp_path, max_iterations=3, policy={"name": "random", "params": {"seed": 1}})
    Path(cfg.state_dir).mkdir(parents=True)
    want = RedisConfig(maxmemory=30 * MB)
    with open(cfg.audit_path, "w") as fh:  # what a daemon killed between intent and CONFIG SET leaves
        fh.write(json.dumps({"t": time.time(), "session": "old", "seq": 1, "decision_id": "old-t0-1-1", "phase": "intent",
                             "target": "t0", "action": "change", "to_apply": want.model_dump()}) + "\n")
    d = Daemon(cfg)
    d.run()
    recs = read_audit(cfg.audit_path)
    rec = next(r for r in recs if r.get("phase") == "reconciled")
    assert rec["decision_id"] == "old-t0-1-1" and rec["outcome"] == "not_applied"  # the sim never got it
    from cachetuner.daemon.audit import pending_intents

    assert pending_intents(recs) == {}


def test_http_endpoints_and_mlflow_run(tmp_path: Path, mlflow_store) -> None:
    cfg = make_cfg(tmp_path, max_iterations=5, tracking={"enabled": True, "tracking_uri": mlflow_store(tmp_path, "m.db")})
    d = Daemon(cfg)
    host, port = d.start_http()  # type: ignore[misc]
    assert host == "127.0.0.1"
    assert cfg.addr_path.read_text().strip() == f"127.0.0.1:{port}"
    d.run_once()  # one loop by hand, then look at the endpoints
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    assert 'cachetuner_daemon_decisions_total{action=' in body
    assert "cachetuner_daemon_loop_seconds_bucket" in body
    assert 'cachetuner_daemon_config_maxmemory_bytes{target="t0"}' in body
    health = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5).read())
    assert health["ok"] and health["targets"]["t0"]["status"] == "ok" and health["iteration"] == 1
    d.run()
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'm.db'}")
    runs = mlflow.search_runs(experiment_names=["cachetuner-daemon"])
    assert len(runs) == 1 and runs.iloc[0]["status"] == "FINISHED"
    hist = mlflow.MlflowClient().get_metric_history(runs.iloc[0]["run_id"], "t0.hit_ratio")
    assert len(hist) >= 5
    cost = mlflow.MlflowClient().get_metric_history(runs.iloc[0]["run_id"], "t0.cost")  # the measured cost too
    assert len(cost) == len(hist) and all(c.value > 0 for c in cost)
    # the session's timeline, drawn from the audit log when it ended: in state_dir and in the run
    png = Path(cfg.state_dir) / f"timeline-{d.session}.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    arts = [a.path for a in mlflow.MlflowClient().list_artifacts(runs.iloc[0]["run_id"], "plots")]
    assert arts == [f"plots/{png.name}"]


def test_cli_sigterm_finishes_step_and_exits_0(tmp_path: Path) -> None:
    cfg = make_cfg(tmp_path, interval_s=0.2, max_iterations=None)
    p = tmp_path / "d.yaml"
    p.write_text(yaml.safe_dump(cfg.model_dump(mode="json")))
    proc = subprocess.Popen(
        [sys.executable, "-m", "cachetuner.cli.main", "daemon", "--config", str(p)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path, start_new_session=True,
    )
    try:
        deadline = time.time() + 120
        while time.time() < deadline and len(read_audit(cfg.audit_path)) < 5:
            time.sleep(0.2)
        # the Docker HEALTHCHECK command, against the running CLI daemon
        hc = subprocess.run(
            [sys.executable, "-m", "cachetuner.daemon.healthcheck", "--state-dir", str(cfg.state_dir)],
            capture_output=True, timeout=60,
        )
        assert hc.returncode == 0, hc.stderr
        os.kill(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err.decode()[-2000:]
    assert out == b""  # stdout stays clean
    recs = read_audit(cfg.audit_path)
    assert recs[-1]["event"] == "stop" and recs[-1]["status"] == "FINISHED"
    from cachetuner.daemon.audit import pending_intents

    assert pending_intents(recs) == {}


def test_hotness_features_fall_back_in_process_when_triton_is_down(tmp_path: Path) -> None:
    """A real Triton gRPC client against a port where nothing listens: every decision still gets hotness
    features, answered by the in-process model, and the fallback shows on /metrics."""
    from cachetuner.daemon.chaos import write_untrained_hotness_model
    from cachetuner.live.stack import free_port

    model = write_untrained_hotness_model(tmp_path / "hot")
    env = {**ENV, "whatif": {"enabled": True, "min_keys": 500}}
    cfg = make_cfg(
        tmp_path,
        policy={"name": "hill-climb"},
        target={"backend_options": {"env": env}},
        hotness={"enabled": True, "model_path": str(model), "triton_url": f"127.0.0.1:{free_port()}", "timeout_s": 0.2,
                 "retry_after_s": 0.05, "options": {"max_keys": 128}},
        max_iterations=6,
    )
    d = Daemon(cfg)
    d.run_once()
    body = d.metrics.render().decode()
    d.run()
    recs = [r for r in read_audit(cfg.audit_path) if r.get("policy_info")]
    assert len(recs) >= 5
    assert {r["policy_info"]["hotness"]["backend"] for r in recs} == {"in_process"}
    assert set(recs[-1]["policy_info"]["hotness"]) >= {"hot_bytes_p80", "hot_churn"}
    assert "cachetuner_hotness_fallback_total" in body


@pytest.fixture(scope="module")
def tiny_ppo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A PPO model trained for 64 steps on the test env (enough to have the right spaces, not to be good)."""
    from stable_baselines3 import PPO

    from cachetuner.env import CacheTuningEnv

    d = tmp_path_factory.mktemp("ppo")
    env = CacheTuningEnv({**ENV, "bounds": {"min_bytes": 8 * MB, "max_bytes": 40 * MB, "initial_bytes": 24 * MB}})
    model = PPO("MlpPolicy", env, n_steps=32, batch_size=32, n_epochs=1, seed=0, device="cpu")
    model.learn(64)
    model.save(d / "model.zip")
    (d / "train_config.yaml").write_text(yaml.safe_dump({"env": ENV, "price_features": False}))
    env.close()
    return d / "model.zip"


def test_the_shipped_policy_runs_in_the_daemon_with_its_price_feature_at_the_anchors_load(tmp_path: Path) -> None:
    """``policy: {name: ppo, model: default}``: the daemon's env (the artifact's, over the target's backend) hands
    the controller the anchor's load estimate, which the shipped policy's price feature reads (``price_load:
    anchor``), and every decision is within bounds."""
    cfg = make_cfg(tmp_path, policy={"name": "ppo", "model": "default"}, max_iterations=8)
    daemon = Daemon(cfg)
    controller = daemon.runners[0].policy.controller  # type: ignore[union-attr]
    assert controller.price_load == "anchor"
    loads: list[Any] = []
    decide = controller.decide

    def watched(ctx: Any) -> RedisConfig:
        loads.append(ctx.info.get("anchor_load"))
        return decide(ctx)

    controller.decide = watched
    daemon.run()
    recs = [r for r in read_audit(cfg.audit_path) if r.get("phase") in ("decision", "intent")]
    assert len(recs) == 8 and not [r for r in recs if r["action"] == "policy_error"]
    assert len(loads) == 8 and all(x is not None and x > 0 for x in loads[1:])


def test_the_default_policy_is_the_shipped_policy_at_the_prices_given(tmp_path: Path) -> None:
    """The daemon's default decider is ``ppo`` with the shipped policy (docs/daemon.md, "Pre-registered: the daemon's
    default controller"); an omitted model means it. ``policy.prices`` replaces the prices of the decider's env (the
    model's own config has ``scaled``), so the policy's price feature and its anchor weigh the operator's prices."""
    from cachetuner.daemon.config import PolicyConfig
    from cachetuner.env.prices import PricesConfig

    assert PolicyConfig().name == "ppo"
    plain = Daemon(make_cfg(tmp_path / "a", policy={}, max_iterations=1)).runners[0].policy
    assert plain.controller.artifact.source == "default"  # type: ignore[union-attr]
    assert plain.env.cfg.prices.preset == "scaled"  # type: ignore[union-attr]
    cfg = make_cfg(tmp_path / "b", policy={"prices": {"preset": "list"}}, max_iterations=6)
    d = Daemon(cfg)
    env = d.runners[0].policy.env  # type: ignore[union-attr]
    listed = PricesConfig(preset="list").resolve_all()
    assert env.cfg.prices.preset == "list" and env.prices.miss == pytest.approx(listed["miss_cost"])
    d.run()
    decided = [r for r in read_audit(cfg.audit_path) if r.get("phase") in ("decision", "intent")]
    assert len(decided) == 6 and not [r for r in decided if r["action"] == "policy_error"]


def test_ppo_policy_from_path_and_from_mlflow_uri(tmp_path: Path, tiny_ppo: Path, mlflow_store) -> None:
    cfg = make_cfg(tmp_path, policy={"name": "ppo", "model": str(tiny_ppo)}, max_iterations=6)
    Daemon(cfg).run()
    recs = [r for r in read_audit(cfg.audit_path) if r.get("phase") in ("decision", "intent")]
    assert len(recs) == 6 and not [r for r in recs if r["action"] == "policy_error"]
    assert all(r["proposal"] is not None for r in recs)

    import mlflow

    uri = mlflow_store(tmp_path, "reg.db")
    mlflow.set_tracking_uri(uri)
    exp = mlflow.create_experiment("train", artifact_location=(tmp_path / "art").as_uri())
    with mlflow.start_run(experiment_id=exp) as run:
        mlflow.log_artifact(str(tiny_ppo), artifact_path="model")
        mlflow.log_artifact(str(tiny_ppo.parent / "train_config.yaml"), artifact_path="config")
    cfg2 = make_cfg(
        tmp_path / "b",
        policy={"name": "ppo", "model": f"runs:/{run.info.run_id}/model"},
        tracking={"enabled": False, "tracking_uri": uri},
        max_iterations=3,
    )
    Daemon(cfg2).run()
    recs2 = [r for r in read_audit(cfg2.audit_path) if r.get("phase") in ("decision", "intent")]
    assert len(recs2) == 3 and not [r for r in recs2 if r["action"] == "policy_error"]
    assert list((Path(cfg2.state_dir) / "models").rglob("model.zip"))
