"""``cachetuner sweep`` on a real two-node Ray cluster (two ``ray start`` processes on loopback).

The head and the second node are separate processes started here, each with one CPU, so two
concurrent trials must use both nodes. The sweep is the CLI, as a user runs it, joined with
``--ray-address``. One of the trials the sweep evaluates first is a config that crashes (an initial
action the action space does not have): the sweep must report it and go on. The cluster is stopped by
the PIDs started here (and their process groups and children): ``ray stop`` would kill every Ray
process on the machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from sweeptest_support import BIN, TINY_ENV

from cachetuner.ports import free_port

REPO = Path(__file__).resolve().parents[2]


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _stop(procs: list[subprocess.Popen], grace: float = 10) -> None:
    """SIGTERM the started processes' groups and every descendant (Ray workers start their own
    sessions), SIGKILL what is left after ``grace`` seconds (0: SIGKILL at once)."""
    pids = {p.pid for p in procs}
    for p in procs:
        pids |= _descendants(p.pid)
    for p in procs if grace > 0 else []:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
    for pid in pids if grace > 0 else []:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.time() + grace
    for p in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(max(deadline - time.time(), 0.1))
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for p in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        p.wait(10)


def _wait_for(log: Path, text: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if log.is_file() and text in log.read_text(errors="replace"):
            return
        assert proc.poll() is None, f"ray start exited ({proc.returncode}):\n{log.read_text(errors='replace')[-3000:]}"
        time.sleep(0.5)
    raise AssertionError(f"ray start did not report {text!r} within {timeout} s:\n{log.read_text(errors='replace')[-3000:]}")


def _native_crash_report(proc: subprocess.CompletedProcess, ray_tmp: Path) -> str:
    """What a natively crashed sweep left: its stderr's end (Python's faulthandler stacks, which the CLI enables)
    and the lines around Ray's own signal report in the driver's core-worker log under the cluster's ``ray_tmp``."""
    parts = [f"rc {proc.returncode}; stderr:\n{proc.stderr[-6000:]}"]
    for log in sorted(ray_tmp.glob("t/session_*/logs/python-core-driver-*.log")):
        text = log.read_text(errors="replace").splitlines()
        at = next((i for i, ln in enumerate(text) if "SIGSEGV" in ln or "Fatal" in ln), None)
        if at is not None:
            parts.append(f"{log.name}:\n" + "\n".join(text[max(at - 5, 0):at + 40]))
    return "\n".join(parts)


@pytest.fixture(scope="module")
def ray_cluster_procs() -> list[subprocess.Popen]:
    """The ``ray start --block`` processes of the module's cluster: head first."""
    return []


@pytest.fixture(scope="module")
def ray_tmp() -> Iterator[Path]:
    """The module's cluster's temp dir: Ray's session logs, the driver's included, live under it. Short, because
    Ray's socket paths do too; removed with the module."""
    tmp = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))
    yield tmp
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def ray_cluster(ray_cluster_procs: list[subprocess.Popen], ray_tmp: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """``(address, env)`` of a head and a second node, one CPU each, token-authenticated."""
    assert (BIN / "ray").is_file(), f"ray is not installed in {BIN} (pip install -e '.[ray]'; make install does)"
    tmp = ray_tmp
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    node = ["--num-cpus", "1", "--object-store-memory", str(80 * 2**20), "--block", "--disable-usage-stats",
            "--node-ip-address", "127.0.0.1"]
    procs = ray_cluster_procs
    try:
        head_log, worker_log = tmp / "head.log", tmp / "worker.log"
        for attempt in range(3):  # a picked port may be taken before Ray binds it (another test worker)
            port = free_port()
            head = subprocess.Popen(
                [str(BIN / "ray"), "start", "--head", "--port", str(port), "--include-dashboard=false",
                 "--ray-client-server-port", str(free_port()), "--temp-dir", str(tmp / "t"), *node],
                stdout=head_log.open("w"), stderr=subprocess.STDOUT, env=env, start_new_session=True)
            procs.append(head)
            try:
                _wait_for(head_log, "Ray runtime started", head)
                break
            except AssertionError:
                text = head_log.read_text(errors="replace").lower()
                if attempt == 2 or head.poll() is None or not ("already occupied" in text or "already in use" in text):
                    raise
                _stop(procs, grace=0)
                procs.clear()
        procs.append(subprocess.Popen(
            [str(BIN / "ray"), "start", "--address", f"127.0.0.1:{port}", *node],
            stdout=worker_log.open("w"), stderr=subprocess.STDOUT, env=env, start_new_session=True))
        _wait_for(worker_log, "Ray runtime started", procs[1])
        yield f"127.0.0.1:{port}", env
    finally:
        # SIGKILL at once, as the lost-node test does to the second node: a graceful stop of the head
        # waits >10 s for its runtime-env agent, and this throw-away cluster (temp dir removed below)
        # needs none
        _stop(procs, grace=0)


@pytest.mark.slow
def test_sweep_runs_on_both_nodes_logs_every_trial_and_registers_a_loadable_model(
    ray_cluster: tuple[str, dict[str, str]], ray_tmp: Path, tmp_path: Path, mlflow_store
) -> None:
    address, env = ray_cluster
    sweep = tmp_path / "sweep.yaml"
    good = {"ppo.learning_rate": 0.001, "ppo.ent_coef": 0.01, "ppo.init_action": 3}
    sweep.write_text(yaml.safe_dump({
        "name": "cluster-test", "num_trials": 5, "max_concurrent": 2, "output_dir": str(tmp_path / "out"),
        "asha": {"grace_period": 1, "reduction_factor": 2},
        "search": {"ppo.learning_rate": {"loguniform": [1e-4, 3e-3]}, "ppo.ent_coef": {"uniform": [0.0, 0.02]},
                   "ppo.init_action": {"choice": [3, 99]}},
        # evaluated first: three valid configs and one whose initial action (99) discrete12 lacks
        "points_to_evaluate": [good, {**good, "ppo.init_action": 99}, {**good, "ppo.learning_rate": 0.0003},
                               {**good, "ppo.ent_coef": 0.0}],
        # two rollouts of 2 x 128 steps, an evaluation after each: two ASHA milestones per trial
        "train": {"total_timesteps": 512, "n_envs": 2, "ppo": {"n_steps": 128, "batch_size": 128, "n_epochs": 2,
                                                               "net_arch": [16, 16]},
                  "env": TINY_ENV, "eval": {"eval_freq": 256}, "early_stop": {"enabled": False},
                  "controllers": {"grid": {"n_sizes": 3, "timeouts": [0]}}},
    }))
    uri = mlflow_store(tmp_path)
    cmd = [str(BIN / "cachetuner"), "sweep", str(sweep), "--ray-address", address, "--json", "--tracking-uri", uri]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode == -signal.SIGSEGV:
        # Ray's driver crashed natively (once in ~60 CI runs, never reproduced here; docs/scaling.md). Run once
        # more, and say so loudly in the warnings summary with the first crash's stacks; a second crash fails.
        warnings.warn(f"cachetuner sweep crashed natively, ran it again:\n{_native_crash_report(proc, ray_tmp)}", stacklevel=1)
        proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"stdout: {proc.stdout[-1500:]}\n{_native_crash_report(proc, ray_tmp)}"
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1, f"--json must print one object, got: {proc.stdout[-2000:]}"
    res = json.loads(lines[0])

    # trials ran on both nodes (Ray node ids: on one machine both nodes share the IP)
    assert res["nodes_used"] == 2, res["trials"]
    assert len({t["node_id"] for t in res["trials"] if t["node_id"]}) == 2
    # the crashing config is reported and the sweep went on
    crashed = [t for t in res["trials"] if t["status"] == "crashed"]
    assert crashed and all(t["config"]["ppo.init_action"] == 99 for t in crashed)
    assert any("init_action" in e["error"] for e in res["errors"]), res["errors"]
    assert res["trials_completed"] >= 3 and res["trials_completed"] + res["trials_failed"] == 5
    assert "crashed" in proc.stderr  # the progress lines said so

    # every trial is a child run of the parent, none left RUNNING
    import mlflow

    client = mlflow.MlflowClient(uri)
    parent = client.get_run(res["mlflow_run_id"])
    assert parent.info.status == "FINISHED" and parent.data.tags["kind"] == "sweep"
    children = client.search_runs([parent.info.experiment_id], f"tags.mlflow.parentRunId = '{res['mlflow_run_id']}'")
    by_trial = {c.data.tags["ray.trial_id"]: c for c in children}
    assert set(by_trial) == {t["trial_id"] for t in res["trials"]}
    for t in res["trials"]:
        run = by_trial[t["trial_id"]]
        assert run.info.status == {"finished": "FINISHED", "stopped": "KILLED", "crashed": "FAILED"}[t["status"]]
        assert run.data.tags["ray.node_id"] == t["node_id"] or t["status"] == "crashed"
    assert any(a.path == "plots/sweep_scores.png" for a in client.list_artifacts(res["mlflow_run_id"], "plots"))

    # the best model is saved, registered, and loads and evaluates
    best = res["best_trial"]
    assert best["score"] == max(t["best_score"] for t in res["trials"] if t["status"] == "finished")
    assert set(best["config"]) == {"ppo.learning_rate", "ppo.ent_coef", "ppo.init_action"}
    from cachetuner.control import make_controller
    from cachetuner.control.learned import load_policy
    from cachetuner.evaluation import evaluate_controllers

    for source in (best["model_path"], res["registered_model"]):
        art = load_policy(source, cache_dir=tmp_path, tracking_uri=uri)
        rep = evaluate_controllers(art.env_config, {"ppo": make_controller("ppo", model=art)}, seed=0)
        assert rep.results["ppo"].summary["intervals"] > 0
    assert res["registered_model"].startswith("models:/cachetuner-cluster-test/")


@pytest.mark.slow
def test_a_lost_node_loses_only_its_running_trial(ray_cluster: tuple[str, dict[str, str]], tmp_path: Path,
                                                   request: pytest.FixtureRequest, mlflow_store) -> None:
    """Kill the second node (the whole process tree, as a machine that vanishes) while both nodes run a
    long trial, after a short trial has finished: the short trial keeps its result, child run and model;
    the lost trial is reported; Ctrl-C then ends the sweep with no run left RUNNING. Runs after the test
    above (it takes the module's cluster down to one node)."""
    address, env = ray_cluster
    worker = request.getfixturevalue("ray_cluster_procs")[1]
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({
        "name": "lost-node-test", "num_trials": 3, "max_concurrent": 2, "output_dir": str(tmp_path / "out"),
        "asha": {"enabled": False}, "search": {"total_timesteps": {"choice": [512, 200_000]}},
        "points_to_evaluate": [{"total_timesteps": 512}, {"total_timesteps": 200_000}, {"total_timesteps": 200_000}],
        "train": {"total_timesteps": 512, "n_envs": 2, "ppo": {"n_steps": 128, "batch_size": 128, "n_epochs": 1,
                                                               "net_arch": [16, 16]},
                  "env": TINY_ENV, "eval": {"eval_freq": 256}, "early_stop": {"enabled": False},
                  "controllers": {"grid": {"n_sizes": 3, "timeouts": [0]}}},
    }))
    uri = mlflow_store(tmp_path)
    log = tmp_path / "stderr.log"

    def lines() -> list[str]:
        return [ln for ln in log.read_text(errors="replace").splitlines() if ln.startswith("sweep: ")]

    def wait(cond: object, what: str, timeout: float = 240) -> None:
        end = time.time() + timeout
        while not cond():  # type: ignore[operator]
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.time() < end, f"{what} within {timeout} s:\n" + log.read_text(errors="replace")[-3000:]
            time.sleep(0.5)

    with log.open("w") as err:
        proc = subprocess.Popen([str(BIN / "cachetuner"), "sweep", str(sweep), "--ray-address", address, "--json",
                                 "--tracking-uri", uri], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=err,
                                text=True)
        try:
            wait(lambda: any("[finished]" in ln for ln in lines()), "the short trial finished")
            # both long trials report: one runs on each node
            wait(lambda: len({ln.split()[1] for ln in lines() if "total_timesteps=200000" in ln and " eval " in ln}) == 2,
                 "two long trials running")
            _stop([worker], grace=0)  # the node is gone: raylet, its workers, everything it started
            wait(lambda: any("[crashed" in ln for ln in lines()), "the lost trial reported", timeout=120)
            proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 130, log.read_text(errors="replace")[-3000:]
    res = json.loads(out)
    by_status: dict[str, list[dict]] = {}
    for t in res["trials"]:
        by_status.setdefault(t["status"], []).append(t)
    (short,) = by_status["finished"]
    assert short["config"] == {"total_timesteps": 512}
    assert len(by_status["crashed"]) == 1 and res["errors"], res["trials"]

    import mlflow

    client = mlflow.MlflowClient(uri)
    assert client.get_run(short["mlflow_run_id"]).info.status == "FINISHED"
    children = client.search_runs([client.get_run(res["mlflow_run_id"]).info.experiment_id],
                                  f"tags.mlflow.parentRunId = '{res['mlflow_run_id']}'")
    assert len(children) == 3 and not [c for c in children if c.info.status == "RUNNING"]
    assert res["best_trial"]["trial_id"] == short["trial_id"]
    from cachetuner.control.learned import load_policy

    assert load_policy(res["best_trial"]["model_path"]).model is not None


def test_the_crash_report_quotes_stderr_and_the_drivers_signal_report(tmp_path: Path) -> None:
    """What the rerun warning carries after a native crash: the stderr's end and, from each driver log under the
    cluster's temp dir, the lines around Ray's SIGSEGV report (not the log's unrelated start)."""
    logs = tmp_path / "t" / "session_2026" / "logs"
    logs.mkdir(parents=True)
    lines = [f"[info] line {i}" for i in range(100)]
    lines[60] = "*** SIGSEGV received at time=1 on cpu 0 ***"
    (logs / "python-core-driver-01.log").write_text("\n".join(lines))
    (logs / "python-core-driver-02.log").write_text("[info] nothing went wrong\n")
    proc = subprocess.CompletedProcess(["cachetuner"], -signal.SIGSEGV, "", "Fatal Python error: Segmentation fault")
    report = _native_crash_report(proc, tmp_path)
    assert report.startswith(f"rc {-signal.SIGSEGV}; stderr:\nFatal Python error: Segmentation fault")
    assert "python-core-driver-01.log:" in report and "python-core-driver-02.log" not in report
    assert "[info] line 55" in report and "SIGSEGV received" in report and "[info] line 99" in report
    assert "[info] line 54" not in report
