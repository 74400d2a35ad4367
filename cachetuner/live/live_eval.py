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

from cachetuner.errors import ConfigError, ServiceError
from cachetuner.live.replay import ReplayOptions, ReplayResult, replay
from cachetuner.live.stack import LocalStack, load_state
from cachetuner.traces.trace import Trace


def load_ppo(path: str) -> Any:
    """``stable_baselines3.PPO.load`` on CPU, one torch thread; a one-line error when the file is unusable."""
    import torch
    from stable_baselines3 import PPO

    torch.set_num_threads(1)
    try:
        return PPO.load(path, device="cpu")
    except (OSError, ValueError, KeyError) as e:
        raise ConfigError(f"--model {path}: cannot load an SB3 PPO model ({e})") from e


def _training_env(model_path: str, config_path: str | None) -> tuple[Any, bool]:
    """(EnvConfig or None, price_features) from the training config of the model, when there is one."""
    path = Path(config_path) if config_path else Path(model_path).with_name("train_config.yaml")
    if not path.is_file():
        if config_path:
            raise ConfigError(f"--config {config_path}: file not found")
        return None, False
    from cachetuner.agent.config import TrainConfig

    tc = TrainConfig.from_yaml(path)
    return tc.eval_env_config(), bool(tc.price_features)


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


def live_eval(
    model_path: str,
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
) -> dict[str, Any]:
    """Run ``intervals`` live steps with the PPO model; returns per-interval rows and totals.

    ``config_path``: the training config (``train_config.yaml``, a :class:`~cachetuner.agent.config.TrainConfig`)
    the model was trained with; by default the one next to the model file, if any. Its (evaluation)
    env config shapes the live env's observation, and its ``price_features`` adds the agent's wrapper.
    Without one, the default env config is used.
    """
    from cachetuner.live.env_factory import make_live_env

    model = load_ppo(model_path)
    env_cfg, price = _training_env(model_path, config_path)
    with _services(redis_url, prometheus_url, stack_dir) as (r_url, p_url, s_dir):
        stop = threading.Event()
        started = threading.Event()
        result: dict[str, Any] = {}

        def run_replay() -> None:
            opts = ReplayOptions(
                rate=rate, loop=True, duration_s=(intervals + 4) * interval_s + 60.0, stack_dir=s_dir,
            )  # fmt: skip
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
            if not started.wait(60.0) or "error" in result:
                raise ServiceError(f"the background replay did not start: {result.get('error', 'timeout')}")
            env = make_live_env(
                redis_url=r_url, prometheus_url=p_url, interval_s=interval_s, cfg=env_cfg, episode_intervals=intervals
            )
            if price:
                from cachetuner.agent.features import PriceFeatures

                env = PriceFeatures(env)
            try:
                if env.observation_space.shape != model.observation_space.shape:
                    raise ConfigError(
                        f"--model {model_path}: observation shape {model.observation_space.shape} does not match the live "
                        f"env's {env.observation_space.shape} (pass the training config with --config)"
                    )
                obs, _info = env.reset()
                for i in range(intervals):
                    action, _ = model.predict(obs, deterministic=deterministic)
                    obs, reward, terminated, truncated, info = env.step(action)
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
        "train_config": str(config_path) if config_path else (str(Path(model_path).with_name("train_config.yaml")) if env_cfg else None),
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
