"""One command, one short live episode: stack (or given URLs) + background replay + PPO policy on the live env.

The replayer runs in a background thread at a fixed rate (looping over the trace), registered with
the stack's Prometheus; the env (``make_live_env``) steps every ``interval_s`` wall seconds and the
SB3 PPO model picks each interval's configuration from the observation, exactly as on the simulator.
"""

from __future__ import annotations

import contextlib
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from cachetuner.errors import CacheTunerError, ConfigError, ServiceError
from cachetuner.live.replay import ReplayResult, replay, replay_options
from cachetuner.live.stack import LocalStack, load_state
from cachetuner.traces.trace import Trace


def _controller(model_path: str | None, config_path: str | None, name: str) -> tuple[Any, Any]:
    """(controller, env config): the trained policy (its own env config) or a registered controller."""
    from cachetuner.control import make_controller, watches_history
    from cachetuner.control.learned import load_policy
    from cachetuner.env import EnvConfig

    if name == "ppo":
        if model_path is None:
            raise ConfigError("--model: the ppo controller needs a model (a model.zip, default or runs:/<id>/model)")
        if config_path and not Path(config_path).is_file():
            raise ConfigError(f"--config {config_path}: file not found")
        artifact = load_policy(model_path, config=config_path)
        return make_controller("ppo", model=artifact), artifact.env_config
    if model_path is not None:  # as `evaluate` refuses options it would ignore: the title would name a model never run
        raise ConfigError(f"--model {model_path}: only --controller ppo runs a model; --controller {name} would ignore it")
    if watches_history(name):
        raise ConfigError(f"--controller {name!r} watches a history before it starts, which live-eval does not give it; "
                          "use mrc (evaluate it with a suite's `history:`, or run it in the daemon with policy.history)")
    env_cfg = EnvConfig.from_yaml(config_path, key="env") if config_path else EnvConfig()
    return make_controller(name), env_cfg


@contextlib.contextmanager
def _services(redis_url: str | None, prometheus_url: str | None, stack_dir: str | None) -> Iterator[tuple[str, str, str | None]]:
    if redis_url and prometheus_url:
        yield redis_url, prometheus_url, stack_dir
        return
    if stack_dir is not None:
        info = load_state(stack_dir)
        if info is None:
            raise ConfigError(f"--stack-dir {stack_dir}: no stack.json (run `cachetuner stack up --dir {stack_dir}`)")
        yield info.redis_url, info.prometheus_url, stack_dir
        return
    with tempfile.TemporaryDirectory(prefix="ct-live-eval-") as d, LocalStack(d) as st:
        yield st.redis_url, st.prometheus_url, d


def _raise_replay_error(err: BaseException | None) -> None:
    """Re-raise the background replay's failure in the main thread as it was (a refused connection stays
    "cannot connect to Redis at ..."); an unexpected one becomes a :class:`ServiceError` that names it."""
    if err is None:
        return
    if isinstance(err, CacheTunerError):
        raise err
    raise ServiceError(f"the background replay failed: {type(err).__name__}: {err}") from err


def live_eval(
    model_path: str | None,
    trace: Trace,
    *,
    intervals: int = 10,
    interval_s: float = 3.0,
    rate: float = 2000.0,
    redis_url: str | None = None,
    prometheus_url: str | None = None,
    stack_dir: str | None = None,
    deterministic: bool = True,
    on_row: Callable[[dict], None] | None = None,
    config_path: str | None = None,
    controller: str = "ppo",
) -> dict[str, Any]:
    """Run ``intervals`` live steps with a controller (default: the PPO model); returns per-interval
    rows and totals. The same controllers and decision contexts as in evaluation and the daemon.

    ``config_path``: the training config (``train_config.yaml``, a :class:`~cachetuner.agent.config.TrainConfig`)
    the model was trained with; by default the one next to the model file, if any. Its (evaluation)
    env config shapes the live env's observation, and its ``price_features`` adds the agent's wrapper.
    Other controllers (``mrc``, ``static-default``, ...) observe through ``config_path``'s env section
    or the default env config.
    """
    from cachetuner.evaluation.episode import context_from_env, wants_sample
    from cachetuner.live.env_factory import make_live_env

    ctl, env_cfg = _controller(model_path, config_path, controller)
    # checked here, before a stack starts: built in the replay thread, a bad --rate was a traceback there and a
    # 60 s wait for a replay that never began in the main thread
    base_opts = replay_options(rate=rate, loop=True, duration_s=(intervals + 4) * interval_s + 60.0)
    with _services(redis_url, prometheus_url, stack_dir) as (r_url, p_url, s_dir):
        stop = threading.Event()
        started = threading.Event()
        result: dict[str, Any] = {}

        opts = base_opts.model_copy(update={"stack_dir": s_dir})

        def run_replay() -> None:
            try:
                result["replay"] = replay(trace, r_url, opts, stop=stop, progress=lambda _n: started.set())
            except Exception as e:  # noqa: BLE001 (reported by the main thread)
                result["error"] = e
            finally:
                started.set()

        worker = threading.Thread(target=run_replay, name="cachetuner-replay", daemon=True)
        worker.start()
        rows: list[dict] = []
        try:
            if not started.wait(60.0):
                raise ServiceError("the background replay did not start within 60 s")
            _raise_replay_error(result.get("error"))
            env = make_live_env(
                redis_url=r_url, prometheus_url=p_url, interval_s=interval_s, cfg=env_cfg, episode_intervals=intervals
            )
            try:
                obs, info = env.reset()
                wants = wants_sample(ctl)
                ctl.reset(context_from_env(env, obs, info, sample=wants))
                for i in range(intervals):
                    cfg = ctl.decide(context_from_env(env, obs, info, sample=wants))
                    obs, reward, terminated, truncated, info = env.unwrapped.step_config(cfg)
                    snap = info["snapshot"]
                    apply = info.get("apply")
                    row = {
                        "interval": i,
                        "policy": info["config"].maxmemory_policy,
                        "maxmemory": info["config"].maxmemory,
                        "timeout": info["config"].timeout,
                        "requests": snap.requests,
                        "hit_ratio": snap.hit_ratio,
                        "evictions": snap.evictions,
                        "used_memory": snap.used_memory,
                        "p95_ms": snap.latency_p95_ms,
                        "reward": float(reward),
                        "stale": snap.stale,
                        "apply_ok": None if apply is None else apply.ok,
                        "apply_error": None if apply is None else apply.error,
                    }
                    rows.append(row)
                    if on_row is not None:
                        on_row(row)
                    if terminated or truncated:
                        break
            finally:
                env.close()
        finally:
            stop.set()
            worker.join(timeout=30.0)
        rep: ReplayResult | None = result.get("replay")
    gets = sum(r["requests"] for r in rows)
    return {
        "model": model_path,
        "controller": controller,
        "train_config": str(config_path) if config_path else None,
        "trace": trace.name,
        "intervals": len(rows),
        "interval_s": interval_s,
        "rate": rate,
        "mean_hit_ratio": float(np.mean([r["hit_ratio"] for r in rows])) if rows else 0.0,
        "total_reward": float(sum(r["reward"] for r in rows)),
        "stale_intervals": sum(bool(r["stale"]) for r in rows),
        "requests_seen": gets,
        "replay": rep.to_dict() if rep is not None else None,
        "rows": rows,
        "finished_at": time.time(),
    }
