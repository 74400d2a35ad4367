"""Train every arm x seed of the hotness ablation in parallel, resumable, inside a wall-clock budget.

The device-machine half of ``cachetuner hotness ablation`` (cachetuner/reports/hotness_ablation/):
no MLflow here (it is logged where the policies are evaluated). One forked process per arm x seed,
each with a SubprocVecEnv of the recipe's ``n_envs`` forked workers; numba kernels and the training
traces are compiled/loaded once in the parent before forking. Every run writes ``last.zip`` +
``state.json`` every ``--checkpoint-s`` seconds and stops by itself at ``--deadline-s`` after the
script's start; the parent re-packs ``--runs`` into ``OUT/runs.tar.gz`` every minute and at the end.
Running it again over the same ``--runs`` resumes each unfinished run (finished ones are skipped).

    PYTHONPATH=. python3 scripts/hotness_ablation_device.py --out OUT --runs DIR --lstm model.pt \\
        [--trace-prefix ../shared/traces/=DIR/traces/] [--seeds 0 1 2 3] [--timesteps N] [--deadline-s 500]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import tarfile
import time
import traceback
from pathlib import Path

T0 = time.time()
for _v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")


def log(msg: str) -> None:
    print(f"[{time.time() - T0:6.1f}s] {msg}", flush=True)


def pack(runs: Path, dst: Path) -> None:
    tmp = dst.with_suffix(".tmp")
    with tarfile.open(tmp, "w:gz") as tf:
        tf.add(runs, arcname="runs")
    tmp.replace(dst)


def warm_up(cfgs: list) -> None:
    """Compile the numba kernels and load every training/evaluation trace once, before forking."""
    import numpy as np

    from cachetuner.agent.train import make_env

    for cfg in cfgs:
        for env_cfg in (cfg.env, cfg.eval_env_config()):
            env = make_env(env_cfg, False, cfg.price_features, cfg.hotness)
            for w in range(len(env_cfg.workloads)):
                env.reset(seed=0, options={"workload": w, "start": "begin"})
                for a in range(int(env.action_space.n)):
                    env.step(np.int64(a))
            env.close()


def child(cfg, out_dir: str, deadline: float, checkpoint_s: float, logfile: str) -> None:
    from cachetuner.reports.hotness_ablation import train_arm

    name = Path(out_dir).name
    with open(logfile, "a") as fh:
        def lg(m: str) -> None:
            line = f"[{time.time() - T0:6.1f}s] {m}"
            print(line, flush=True)
            fh.write(line + "\n")
            fh.flush()

        try:
            st = train_arm(cfg, out_dir, deadline=deadline, checkpoint_s=checkpoint_s, log=lg)
            lg(f"{name}: done {json.dumps(st)}")
        except Exception:  # noqa: BLE001 (report and exit non-zero; the parent packs what exists)
            lg(f"{name}: FAILED\n{traceback.format_exc()}")
            sys.exit(1)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", required=True)
    ap.add_argument("--lstm", required=True)
    ap.add_argument("--recipe", default="experiments/general.yaml")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    ap.add_argument("--arms", nargs="+", default=None)
    ap.add_argument("--timesteps", type=int, default=None)
    ap.add_argument("--n-envs", type=int, default=None)
    ap.add_argument("--trace-prefix", default=None, help="OLD=NEW rewrite of workload paths")
    ap.add_argument("--deadline-s", type=float, default=500.0)
    ap.add_argument("--checkpoint-s", type=float, default=60.0)
    a = ap.parse_args()

    import torch

    torch.set_num_threads(1)
    from cachetuner.reports.hotness_ablation import ARMS, arm_config, run_dir

    out, runs = Path(a.out), Path(a.runs)
    out.mkdir(parents=True, exist_ok=True)
    runs.mkdir(parents=True, exist_ok=True)
    prefix = tuple(a.trace_prefix.split("=", 1)) if a.trace_prefix else None
    arms = a.arms or list(ARMS)
    jobs = []
    for seed in a.seeds:
        for arm in arms:
            cfg = arm_config(a.recipe, arm, seed, lstm_path=a.lstm, timesteps=a.timesteps, n_envs=a.n_envs,
                             vec_env="subproc", trace_prefix=prefix)  # type: ignore[arg-type]
            jobs.append((arm, seed, cfg))
    log(f"{len(jobs)} runs, {os.cpu_count()} CPUs, python {sys.version.split()[0]}, torch {torch.__version__}")
    todo = [j for j in jobs if not json.loads((run_dir(runs, j[0], j[1]) / "state.json").read_text()
                                              if (run_dir(runs, j[0], j[1]) / "state.json").is_file() else "{}").get("finished")]
    log(f"to train: {[f'{arm}_s{seed}' for arm, seed, _ in todo]}")
    t = time.time()
    warm_up([todo[0][2], next((j[2] for j in todo if j[2].hotness.enabled), todo[0][2])] if todo else [])
    log(f"warm-up (numba, traces, LSTM) {time.time() - t:.1f}s")
    deadline = T0 + a.deadline_s
    ctx = mp.get_context("fork")
    procs = []
    for arm, seed, cfg in todo:
        d = run_dir(runs, arm, seed)
        d.mkdir(parents=True, exist_ok=True)
        p = ctx.Process(target=child, args=(cfg, str(d), deadline, a.checkpoint_s, str(d / "log.txt")))
        p.start()
        procs.append(p)
    last_pack = time.time()
    while any(p.is_alive() for p in procs) and time.time() < deadline + 45:
        time.sleep(2)
        if time.time() - last_pack > 60:
            pack(runs, out / "runs.tar.gz")
            last_pack = time.time()
    for p in procs:
        if p.is_alive():
            log(f"terminating a run still alive at {time.time() - T0:.0f}s")
            p.terminate()
        p.join(5)
    pack(runs, out / "runs.tar.gz")
    states = {}
    for arm, seed, _ in jobs:
        f = run_dir(runs, arm, seed) / "state.json"
        states[f"{arm}_s{seed}"] = json.loads(f.read_text()) if f.is_file() else None
    (out / "states.json").write_text(json.dumps(states, indent=1))
    for k, v in states.items():
        log(f"{k}: " + ("no state" if v is None else f"{v['steps']:,} steps finished={v['finished']} "
                                                       f"early={v['stopped_early']} wall={v['wall_s']:.0f}s"))
    log("end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
