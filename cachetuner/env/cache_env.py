"""The Gymnasium environment: one step = one tuning interval of a Redis cache."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np

from cachetuner.backend import CacheBackend, SimulatedBackend, backend_facts
from cachetuner.config import RedisConfig
from cachetuner.env.actions import clip_config, make_action_codec
from cachetuner.env.config import EnvConfig
from cachetuner.env.mrc_features import mrc_feature_names, mrc_features
from cachetuner.env.observation import ObservationBuilder
from cachetuner.env.reward import get_reward_fn, interval_cost
from cachetuner.env.whatif import MIRROR, WhatIfEstimator, whatif_label
from cachetuner.errors import BackendError, ConfigError
from cachetuner.metrics import MetricsSnapshot
from cachetuner.mrc.cost import CostCurve, Prices
from cachetuner.mrc.curves import MissRatioCurves
from cachetuner.mrc.decide import MRCControlSettings, MRCDecider
from cachetuner.mrc.estimator import MRCEstimator
from cachetuner.mrc.rule_settings import resolve_reference
from cachetuner.space import ConfigSpace
from cachetuner.ttl.knobs import ClientTTL, ClientTTLBackend


class CacheTuningEnv(gym.Env):
    """Tune ``maxmemory``, ``maxmemory-policy`` and ``timeout`` of a Redis cache in front of AI inference.

    ## Description
    Each step lets one tuning interval (``interval_s``, default 60 s of trace time) of traffic pass
    through the cache under the configuration chosen by the action, then reports what happened. The
    cache is a :class:`~cachetuner.backend.CacheBackend`: by default a :class:`SimBackend` replaying
    a window of one of ``cfg.workloads`` (chosen by weight) through the Redis-faithful simulator;
    the live backend has the same interface. Before the first observation, ``warmup_intervals``
    intervals run under the initial configuration (not counted as steps).

    ## Action Space
    ``multidiscrete`` (``CacheTuner/SimRedis-v0``): ``MultiDiscrete([5, 8, 3])`` by default:
    a relative maxmemory step in ``memory_steps`` (-30 %, -10 %, 0, +10 %, +30 %, clipped to the
    bounds), a policy of ``policies`` (default all 8 Redis policies in ``REDIS_POLICIES`` order) and
    a ``timeout`` in ``timeouts`` (0, 30, 300 s); optional extra dimensions for ``maxmemory-samples``,
    ``lfu-log-factor`` and ``lfu-decay-time`` when their choice lists are configured.
    ``discrete12`` (``CacheTuner/SimRedisDiscrete-v0``): ``Discrete(12)``, ``a = 4 * move + policy``
    with move in (down, hold, up) by ``discrete_step`` (25 %) and policy in (allkeys-lru,
    allkeys-lfu, volatile-lru, volatile-ttl); the timeout is left unchanged.
    ``actions.ttl_multipliers`` (multidiscrete only) appends client-side TTL dimensions: one shared
    multiplier, or one per class of ``actions.ttl_classes``. They set :attr:`client_ttl` (a
    :class:`~cachetuner.ttl.knobs.ClientTTL`, never part of the :class:`RedisConfig`), which multiplies
    the TTL of every write of the next interval (SETs and read-through fills) by its QoS class's factor.
    Baselines may bypass actions with :meth:`step_config` (same bounds, same reward).

    ## Observation Space
    ``Box(float32)`` of ``27 + n_whatif`` features (27 + 11 by default), each clipped to its range:

    | # | feature | scaling |
    |---|---|---|
    | 0, 1 | hit ratio, byte hit ratio | [0, 1] |
    | 2 | request rate | log(rate / reference) / log(16), [-1, 1]; reference = workload mean rate |
    | 3 | rate volatility | std / mean of the last 5 interval rates, [0, 1] |
    | 4 | memory utilisation | used_memory / maxmemory, [0, 1.5] |
    | 5, 6 | evictions, expirations per request | [0, 1] |
    | 7-9 | p50, p95, p99 latency | log(p / 0.1 ms) / log(20 s / 0.1 ms), [0, 1] |
    | 10 | p95 against the SLO | p95 / (p95 + SLO), [0, 1); 0.5 at the SLO |
    | 11 | L2 hit ratio (share of L1 misses served by L2) | [0, 1] |
    | 12 | connected clients | c / (c + 50) |
    | 13 | rejected writes per request | [0, 1] |
    | 14 | maxmemory | position between the bounds, [0, 1] |
    | 15-22 | maxmemory-policy | one-hot over the 8 Redis policies |
    | 23 | timeout | index among ``timeouts`` / (n - 1) |
    | 24-26 | maxmemory-samples, lfu-log-factor, lfu-decay-time | log2(s)/6, f/255, min(t, 60)/60 |
    | 27.. | what-if hit ratios | per (policy, size factor) of ``whatif``, then the mirror ``current@1.00`` |

    What-if features come from persistent mini simulations on a ~1 % spatial key sample
    (:class:`~cachetuner.env.whatif.WhatIfEstimator`); they are absent when ``whatif.enabled`` is off.
    With TTL dimensions, the multipliers in force come last (log position between the smallest and
    the largest choice, [0, 1]); without, the observation is unchanged.

    ## Rewards
    ``cost`` (default): minus the interval's operating cost (memory held + backend calls + SLO
    breach + config switch, + stale hits when ``reward.stale_cost`` > 0), divided by ``miss_cost * gets``
    so it reads as "miss ratio plus memory cost per get". A client TTL change is not a switch. ``seed``: the seed design's ``0.6 dHR + 0.3 log(1/dLatency) - 0.1 dMemUtil``.
    See :mod:`cachetuner.env.reward`. ``info["cost"]`` carries the unnormalised terms.

    ## Episode End
    Never terminated (a cache has no terminal state). Truncated when the workload window ends:
    after ``episode_intervals`` steps, or at the trace's end when ``episode_intervals`` is ``None``;
    or after ``max_episode_steps`` steps when that is set (for backends without an end, e.g. live).
    Registered ids also carry Gymnasium's ``TimeLimit`` (30 steps: the default ``episode_intervals``).

    ## Arguments
    ``cfg``: :class:`EnvConfig` (or a dict validated into one; ``None`` = defaults).
    ``backend``: a :class:`CacheBackend`; ``None`` builds a :class:`SimBackend` from ``cfg.workloads``.
    ``actions``: overrides ``cfg.actions.space`` (what the registered ids set).
    ``render_mode``: only ``None``.
    ``reset(options=...)``: ``{"workload": index or name, "start": "begin" | interval index}``
    pins the traffic (evaluation on identical windows).

    ``info`` of reset and step: ``snapshot`` (MetricsSnapshot), ``cost`` (dict), ``config``
    (RedisConfig in force during the interval), ``client_ttl`` (ClientTTL in force during it),
    ``whatif`` (label -> hit ratio), ``workload`` (name), and on steps that changed the config
    ``apply`` (ApplyResult).

    Client TTL multipliers (the action dimensions or a non-default ``client_ttl``) need a backend that
    implements :class:`~cachetuner.ttl.knobs.ClientTTLBackend` (the simulated one); any other backend is
    refused with a one-line ConfigError naming the field.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        cfg: EnvConfig | dict | None = None,
        backend: CacheBackend | None = None,
        *,
        actions: str | None = None,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None:
            raise ConfigError(f"render_mode={render_mode!r}: CacheTuningEnv does not render; use None")
        if cfg is None:
            cfg = EnvConfig()
        elif isinstance(cfg, dict):
            from cachetuner.yamlconfig import validate

            cfg = validate(EnvConfig, cfg, "env config")
        if actions is not None and actions != cfg.actions.space:
            cfg = cfg.model_copy(update={"actions": cfg.actions.model_copy(update={"space": actions})})
        self.cfg = cfg
        self.render_mode = None
        if backend is None:
            from cachetuner.env.sim_backend import SimBackend

            backend = SimBackend(cfg)
        self.backend = backend
        if cfg.client_ttl_used and not isinstance(backend, ClientTTLBackend):
            field = "env.actions.ttl_multipliers" if cfg.actions.ttl_enabled else "env.client_ttl"
            raise ConfigError(
                f"{field}: {type(backend).__name__} cannot apply client-side TTL multipliers "
                "(only the simulated backend can); remove it for this backend"
            )
        self._client_ttl: ClientTTL = cfg.client_ttl
        self._codec = make_action_codec(cfg.actions)
        self._reward_fn = get_reward_fn(cfg.reward.kind)
        self.action_space = self._codec.space
        labels: list[str] = []
        if cfg.whatif.enabled:
            labels = [whatif_label(p, f) for p in cfg.whatif.policies for f in cfg.whatif.sizes]
            if cfg.whatif.mirror:
                labels.append(whatif_label(MIRROR, 1.0))
        self._obs = ObservationBuilder(cfg, labels, mrc_feature_names(cfg) if cfg.observation.mrc_features else [])
        self.observation_space = self._obs.space
        self.whatif: WhatIfEstimator | None = None
        self.mrc: MRCEstimator | None = None
        self._cost_curve: CostCurve | None = None
        self._anchor: RedisConfig | None = None
        self._decider = MRCDecider(cfg.mrc.anchor)
        self._reward_cfg = cfg.reward
        self._price_interval_s: float | None = None  # price_intervals_as
        self._prev: MetricsSnapshot | None = None
        self._bounds: tuple[int, int] | None = None
        self._steps = 0
        self._done = True

    # -- introspection for baselines and evaluation ------------------------------------------------------
    @property
    def bounds(self) -> tuple[int, int]:
        """``(min, max)`` maxmemory in bytes for the current episode."""
        if self._bounds is None:
            self._bounds = self._resolve_bounds()
        return self._bounds

    @property
    def action_policies(self) -> list[str]:
        """Policies the action space can express."""
        return list(getattr(self._codec, "policies", self.cfg.actions.policies))

    @property
    def action_timeouts(self) -> list[int]:
        """Timeouts the action space can express (``discrete12`` keeps the current one)."""
        if self.cfg.actions.space == "discrete12":
            return [self.backend.config.timeout]
        return list(self.cfg.actions.timeouts)

    @property
    def space(self) -> ConfigSpace:
        """What a controller may choose from this episode: the bounds and the action space's choices."""
        lo, hi = self.bounds
        return ConfigSpace(int(lo), int(hi), tuple(self.action_policies), tuple(int(t) for t in self.action_timeouts))

    @property
    def prices(self) -> Prices:
        """This episode's prices (the reward's, with the episode's randomised memory factor)."""
        rw = self._reward_cfg
        lat = self.cfg.sim.latency
        budget = int(self.bounds[1]) if self.cfg.prices is not None and self.cfg.prices.budget is not None else None
        return Prices(
            memory_per_gib_hour=rw.memory_cost_per_gb_hour, miss=rw.miss_cost, slo_penalty=rw.slo_penalty,
            switch=rw.switch_cost, interval_s=self._price_interval_s or self.cfg.interval_s, slo_p95_ms=self.cfg.slo_p95_ms,
            miss_latency_ms=lat.miss_ms + 2 * lat.network_ms, miss_sigma=lat.miss_sigma,
            hit_latency_ms=lat.network_ms + lat.l1_hit_ms, budget_bytes=budget,
        )

    def price_intervals_as(self, seconds: float) -> None:
        """Price memory over intervals of ``seconds`` from now on, in :attr:`prices` (what the anchor and every
        controller weigh). For a daemon's mirror env: the interval it measured (a live target's ``interval_s``),
        which the env config's ``interval_s`` need not match. The misses a rule weighs are the measured interval's,
        so memory priced over another length tilted every decision (an env config of 60 s under a 10 s daemon held
        memory six times too dear). An env that steps its own backend prices its own ``interval_s``, as its reward
        prices each snapshot's."""
        self._price_interval_s = float(seconds)

    @property
    def curves(self) -> MissRatioCurves | None:
        """The windowed miss-ratio curves after the last interval (``None`` without ``mrc.enabled``)."""
        return self.mrc.curves() if self.mrc is not None else None

    @property
    def client_ttl(self) -> ClientTTL:
        """The client-side TTL multipliers in force (applied to writes, never sent with CONFIG SET)."""
        return self._client_ttl

    @property
    def anchor(self) -> RedisConfig | None:
        """The config the cost curve says is cheapest now (``None`` until the curves are ready)."""
        return self._anchor

    @property
    def anchor_rule(self) -> MRCControlSettings:
        """The ``mrc`` rule the anchor follows (``env.mrc.anchor``): what a policy's ``mrc-offset`` actions
        and MRC features are relative to, read-only."""
        return self._decider.settings.model_copy()

    def anchor_state(self) -> tuple[MRCEstimator | None, MRCDecider]:
        """What the anchor has learned so far: the curves' estimator and the anchor rule (its cold phase, streaks,
        fill cap). A daemon's checkpoint saves them (``cachetuner.daemon.checkpoint``) so that a restarted ``ppo``
        daemon does not run the anchor's cold-phase bets again on a cache tuned for weeks."""
        return self.mrc, self._decider

    def resume_anchor(self, estimator: MRCEstimator | None, decider: MRCDecider) -> None:
        """Carry on from :meth:`anchor_state` saved by an earlier process, after :meth:`reset`. The anchor config
        itself is recomputed from the next interval, before the next decision reads it."""
        self.mrc, self._decider = estimator, decider
        self._cost_curve, self._anchor = decider.last, None

    def fork(self) -> CacheTuningEnv:
        """An independent copy in the current state, simulator included: the hindsight controllers'
        window into the future. Only simulated backends can be forked. The fork shares the immutable
        traces and has no estimators (they feed observations only, never the cost)."""
        if not isinstance(self.backend, SimulatedBackend):
            raise BackendError("hindsight controllers (best-static, oracle, dp-hindsight) need a simulated backend")
        new = copy.copy(self)
        new.backend = self.backend.clone()
        new.whatif = None
        new.mrc = None
        new._cost_curve, new._anchor = None, None
        new._obs = copy.deepcopy(self._obs)
        return new

    @property
    def observation_names(self) -> list[str]:
        return list(self._obs.names)

    @property
    def workload_name(self) -> str:
        """Name of the current episode's workload (``live`` for backends without one)."""
        name = backend_facts(self.backend).workload_name
        return "live" if name is None else str(name)

    workload = workload_name

    # -- Gymnasium API ------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = set(options) - {"workload", "start"}
        if unknown:
            raise ConfigError(f"reset options {sorted(unknown)} unknown; valid: workload, start")
        bseed = int(self.np_random.integers(2**31 - 1))
        if isinstance(self.backend, SimulatedBackend):  # pinning and env-driven warm-up
            self.backend.reset(seed=bseed, warmup=False, **options)
        elif options:
            raise ConfigError(f"reset options {sorted(options)} need a simulated backend")
        else:
            self.backend.reset(seed=bseed)
        facts = backend_facts(self.backend)
        self._bounds = self._resolve_bounds()
        self._client_ttl = self.cfg.client_ttl
        if isinstance(self.backend, ClientTTLBackend):
            self.backend.set_client_ttl(self._client_ttl)
        config = self.backend.config
        if self.cfg.whatif.enabled:
            self.whatif = WhatIfEstimator(
                self.cfg.whatif,
                config,
                n_keys_hint=facts.n_keys,
                key_bytes=facts.key_bytes,
                read_only=facts.read_only,
                sim_params=facts.sim_params,
                seed=bseed,
            )
        self._reward_cfg = self._episode_reward(bseed)
        self.mrc = self._make_mrc(config, bseed) if self.cfg.mrc.enabled else None
        self._cost_curve, self._anchor = None, None
        # curves that watched the skipped history have no cold phase, for the anchor as for mrc-history
        self._decider.reset(warm=self.mrc is not None and self.cfg.mrc.warm_from_skipped
                            and self.mrc.curves().ready(self._decider.settings.min_weight))
        self._obs.reset(facts.rate_reference)
        snap = MetricsSnapshot(interval_s=self.backend.interval_s, maxmemory=config.maxmemory, config=config)
        for i in range(self.cfg.warmup_intervals):
            if self.backend.exhausted:
                break
            # the anchor decides only from the interval the first observation describes, as the mrc
            # controller does at its first decision: warm-up intervals it sees but cannot act on would start
            # its clock early (its cold phase, its confirm streaks), and k = 0 would no longer be mrc
            snap = self._advance(anchor=i == self.cfg.warmup_intervals - 1)
            if self.backend.exhausted:  # keep at least one step in the episode
                need = (self.cfg.warmup_intervals + 1) * self.cfg.interval_s
                trace = getattr(self.backend, "trace", None)
                spans = f"spans {trace.duration:.3g} s, " if trace is not None else ""
                raise ConfigError(
                    f"workload {self.workload}: {spans}shorter than warmup_intervals + 1 "
                    f"({self.cfg.warmup_intervals + 1} x {self.cfg.interval_s:g} s = {need:g} s); a lower --rate "
                    "stretches a trace without timestamps, or lower env.warmup_intervals / env.interval_s"
                )
        self._prev = snap
        self._steps = 0
        self._done = False
        cost = interval_cost(snap, changed=False, cfg=self._reward_cfg, slo_p95_ms=self.cfg.slo_p95_ms)
        return self._observe(snap, config), self._info(snap, cost, config)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        cfg = self.decode_action(action)
        anchor = self._anchor
        obs, reward, terminated, truncated, info = self._step_with(cfg, self.decode_client_ttl(action))
        penalty = self.cfg.reward.anchor_deviation
        if penalty and anchor is not None and (cfg.maxmemory, cfg.maxmemory_policy) != (anchor.maxmemory, anchor.maxmemory_policy):
            reward -= penalty  # reward.anchor_deviation: the action left the anchor's config
            info["anchor_deviation"] = True
        return obs, reward, terminated, truncated, info

    def step_config(
        self, config: RedisConfig, client_ttl: ClientTTL | None = None
    ) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Step with a configuration chosen directly (baselines); maxmemory and timeout are clipped to
        the same bounds as actions, and the reward is the same. ``client_ttl``: the TTL multipliers for
        the interval (``None`` keeps those in force)."""
        return self._step_with(clip_config(config, self.bounds, self.cfg.actions), client_ttl)

    def decode_action(self, action: Any) -> RedisConfig:
        """The bounded, validated config an action stands for, relative to the current config."""
        return self._codec.decode(action, self.backend.config, self.bounds, self._anchor)

    def decode_client_ttl(self, action: Any) -> ClientTTL:
        """The client TTL multipliers an action stands for (those in force without TTL dimensions)."""
        return self._codec.decode_ttl(action, self._client_ttl)

    def render(self) -> None:
        return None

    def close(self) -> None:
        self.backend.close()

    # -- internals ----------------------------------------------------------------------------------------
    def _resolve_bounds(self) -> tuple[int, int]:
        b = backend_facts(self.backend).bounds
        return tuple(b) if b is not None else self.cfg.bounds.resolve(None)  # type: ignore[return-value]

    def _advance(self, anchor: bool = True) -> MetricsSnapshot:
        """One interval of traffic: the estimators see it, and (``anchor``) the anchor rule decides from it."""
        snap = self.backend.step()
        sample = None
        if self.whatif is not None:
            sample = self.backend.recent_requests()
            # A pre-sampled (live) stream needs the interval's GET count for SHARDS-adj.
            self.whatif.update(sample, total_gets=snap.gets if sample.rate < 1.0 else None)
        if self.mrc is not None:
            if sample is None:  # the what-if estimator did not fetch it
                sample = self.backend.recent_requests()
            live = sample.rate < 1.0
            self.mrc.update(sample, total_gets=snap.gets if live else None,
                            total_get_bytes=snap.byte_requests if live else None)
            if anchor:
                self._update_anchor(snap)
        return snap

    def _step_with(
        self, config: RedisConfig, client_ttl: ClientTTL | None = None
    ) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self._done or self._prev is None:
            raise BackendError("CacheTuningEnv: episode is over (or never started); call reset()")
        if client_ttl is not None and client_ttl != self._client_ttl:
            if not isinstance(self.backend, ClientTTLBackend):
                raise ConfigError(
                    f"client_ttl: {type(self.backend).__name__} cannot apply client-side TTL multipliers "
                    "(only the simulated backend can)"
                )
            self.backend.set_client_ttl(client_ttl)
            self._client_ttl = client_ttl
        before = self.backend.config
        result = None
        if config != before:
            result = self.backend.apply(config)
            if self.whatif is not None:
                self.whatif.set_config(result.applied)
        in_force = self.backend.config
        changed = in_force != before
        snap = self._advance()
        cost = interval_cost(snap, changed=changed, cfg=self._reward_cfg, slo_p95_ms=self.cfg.slo_p95_ms)
        reward = self._reward_fn(cost, snap, self._prev, self._reward_cfg)
        self._prev = snap
        self._steps += 1
        limit = self.cfg.max_episode_steps
        truncated = bool(self.backend.exhausted) or (limit is not None and self._steps >= limit)
        self._done = truncated
        info = self._info(snap, cost, in_force)
        if result is not None:
            info["apply"] = result
        return self._observe(snap, in_force), float(reward), False, truncated, info

    def _observe(self, snap: MetricsSnapshot, config: RedisConfig) -> np.ndarray:
        est = self.whatif.last if self.whatif is not None else None
        extra = mrc_features(self, config) if self.cfg.observation.mrc_features else None
        return self._obs.build(snap, config, self.bounds, est, extra, self._client_ttl)

    def _episode_reward(self, seed: int) -> Any:
        """The reward config of this episode: the memory price times a log-uniform factor when
        ``prices.randomize_memory`` is set (training-time domain randomisation)."""
        p = self.cfg.prices
        if p is None or p.randomize_memory is None:
            return self.cfg.reward
        lo, hi = p.randomize_memory
        f = float(np.exp(np.random.default_rng(seed + 17).uniform(np.log(lo), np.log(hi))))
        return self.cfg.reward.model_copy(update={"memory_cost_per_gb_hour": self.cfg.reward.memory_cost_per_gb_hour * f})

    def _make_mrc(self, config: RedisConfig, seed: int) -> MRCEstimator:
        facts = backend_facts(self.backend)
        params = facts.sim_params or self.cfg.sim
        n_keys, ws, kb, rate = facts.n_keys, facts.working_set_bytes, facts.key_bytes, facts.rate_reference
        obj = (ws - params.fixed_bytes) / n_keys if (ws and n_keys) else None
        est = MRCEstimator(
            self.cfg.mrc, self.bounds, n_keys_hint=n_keys, mean_object_bytes=obj,
            requests_per_interval=rate * (resolve_reference(self.cfg.mrc.reference_interval_s, self.cfg.interval_s)
                                          or self.cfg.interval_s) if rate else None,
            key_bytes=int(round(float(np.mean(kb)))) if kb is not None and len(kb) else None,
            read_only=facts.read_only, sim_params=params, base_config=config, seed=seed,
            knob_size=int(self.bounds[1]) if self.prices.budget_bytes is not None else None,
        )
        if self.cfg.mrc.warm_from_skipped:
            from cachetuner.env.sim_backend import SimBackend

            if isinstance(self.backend, SimBackend):  # a live cache has no skipped past to replay
                history = self.backend.skipped_requests()
                if history is not None:  # one interval of history per step, as the episode replays it (rate_factor)
                    est.watch(history, self.backend.interval_s * self.backend.speed)
        return est

    def _update_anchor(self, snap: MetricsSnapshot) -> None:
        """What the ``mrc`` controller would run next (:class:`~cachetuner.mrc.decide.MRCDecider`, the same
        rule): ``mrc-offset`` actions and the MRC observation features are relative to it."""
        assert self.mrc is not None
        config = self.backend.config
        proposal = self._decider.decide_after(snap, self.mrc.curves(), self.prices, config, self.space)
        self._cost_curve = self._decider.last
        # without a cost curve yet the anchor exists only when the rule moves anyway (free growth)
        self._anchor = proposal if (self._cost_curve is not None or proposal != config) else None

    def _info(self, snap: MetricsSnapshot, cost: dict[str, float], config: RedisConfig) -> dict[str, Any]:
        return {
            "snapshot": snap,
            "cost": cost,
            "config": config,
            "client_ttl": self._client_ttl,
            "whatif": self.whatif.last if self.whatif is not None else {},
            "workload": self.workload,
            "step": self._steps,
            "anchor": self._anchor,
            "anchor_cold": self.mrc is not None and self._decider.cold,  # ppo.defer_cold
            "anchor_young": self.mrc is not None and self._decider.young,  # ppo.defer_young
            "anchor_load": self._decider.rate if self.mrc is not None else None,  # ppo.price_load: anchor
        }
