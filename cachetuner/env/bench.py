"""Env throughput benchmark (``cachetuner bench env``): steps/s with the what-if features on vs off
(miss-ratio curves off in both, as in the README's historical figure), and with the full-range
miss-ratio curves on top.

Random actions on one env per variant, stepped alternately with the same action sequence so that a
busy machine slows every variant alike; JIT compilation and resets are excluded from the timing.
"""

from __future__ import annotations

import time
from typing import Any

from cachetuner.env.cache_env import CacheTuningEnv
from cachetuner.env.config import EnvConfig

#: The variants :func:`bench_env` compares: name -> (``whatif.enabled``, ``mrc.enabled``).
WHATIF_VARIANTS: tuple[tuple[str, bool, bool], ...] = (
    ("whatif_on", True, False), ("whatif_off", False, False), ("whatif_and_mrc_on", True, True),
)


def run_interleaved(cfgs: dict[str, EnvConfig], steps: int, seed: int) -> dict[str, dict[str, Any]]:
    """``steps`` random actions on one env per config, stepped alternately (see the module docstring).

    ``cpu_*`` figures use this thread's CPU time (robust to other processes), the rest wall time.
    """
    envs = {name: CacheTuningEnv(c) for name, c in cfgs.items()}
    first = next(iter(envs.values()))
    first.action_space.seed(seed)
    actions = [first.action_space.sample() for _ in range(steps + 1)]
    stats = {name: {"wall": 0.0, "cpu": 0.0, "requests": 0, "resets": 0, "reset_s": 0.0} for name in envs}
    for env in envs.values():
        env.reset(seed=seed)
        env.step(actions[0])  # compile everything before timing
        env.reset(seed=seed)
    for a in actions[1:]:
        for name, env in envs.items():
            st = stats[name]
            w0, c0 = time.perf_counter(), time.thread_time()
            _obs, _r, term, trunc, info = env.step(a)
            st["wall"] += time.perf_counter() - w0
            st["cpu"] += time.thread_time() - c0
            st["requests"] += info["snapshot"].requests
            if term or trunc:
                r0 = time.perf_counter()
                env.reset()
                st["reset_s"] += time.perf_counter() - r0
                st["resets"] += 1
    out: dict[str, dict[str, Any]] = {}
    for name, env in envs.items():
        st = stats[name]
        res: dict[str, Any] = {
            "steps": steps,
            "seconds": round(st["wall"], 3),
            "steps_per_s": round(steps / st["wall"], 1),
            "sim_requests_per_s": round(st["requests"] / st["wall"]),
            "cpu_steps_per_s": round(steps / st["cpu"], 1),
            "requests_per_step": round(st["requests"] / steps),
            "resets": st["resets"],
            "reset_seconds_mean": round(st["reset_s"] / st["resets"], 4) if st["resets"] else None,
        }
        if env.whatif is not None:
            res.update(whatif_rate=round(env.whatif.rate, 5), whatif_mini_caches=len(env.whatif.labels),
                       whatif_sampled_keys=env.whatif.sampled_keys)  # fmt: skip
        out[name] = res
        env.close()
    return out


def bench_env(cfg: EnvConfig, steps: int = 200, seed: int = 0) -> dict[str, Any]:
    """The ``bench env --json`` report: per-variant figures plus the what-if slowdown ratios."""
    variants = {
        name: cfg.model_copy(update={"whatif": cfg.whatif.model_copy(update={"enabled": w}),
                                     "mrc": cfg.mrc.model_copy(update={"enabled": m})})
        for name, w, m in WHATIF_VARIANTS
    }
    results = run_interleaved(variants, steps, seed)
    on, off, mrc = results["whatif_on"], results["whatif_off"], results["whatif_and_mrc_on"]
    return {
        "workloads": [w.label for w in cfg.workloads],
        "interval_s": cfg.interval_s,
        "action_space": cfg.actions.space,
        **results,
        "whatif_cost_ratio": round(off["steps_per_s"] / on["steps_per_s"], 3),
        "whatif_cpu_cost_ratio": round(off["cpu_steps_per_s"] / on["cpu_steps_per_s"], 3),
        "mrc_cost_ratio": round(on["steps_per_s"] / mrc["steps_per_s"], 3),
        "mrc_cpu_cost_ratio": round(on["cpu_steps_per_s"] / mrc["cpu_steps_per_s"], 3),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
    }


__all__ = ["WHATIF_VARIANTS", "bench_env", "run_interleaved"]
