"""Bad input to ``cachetuner ttl compare / tenants``: one line naming the option, field or file; no traceback,
no silent result (fuzz items A13, A14, C9, A10b, B3)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import cachetuner.cli.ttl_cmds  # noqa: F401  (registers the commands)
from cachetuner.cli.app import app
from cachetuner.config import RedisConfig
from cachetuner.errors import CacheTunerError, ConfigError, UnknownNameError
from cachetuner.tenants import load_tenant_workload
from cachetuner.tenants.qos import qos_experiment
from cachetuner.traces.trace import Trace
from cachetuner.ttl import simulate_ttl

runner = CliRunner()

COMPARE = ["ttl", "compare", "--trace", "bundled:web07", "--rate", "20", "--size-model", "fixed:2000", "--limit", "3000",
           "--policy", "fixed:300", "--no-track"]  # fmt: skip
WORKLOAD = {"name": "bad", "duration_s": 600, "tenants": [
    {"name": "gold", "qos": "gold", "trace": "synthetic:zipf", "rate": 20, "seed": 1,
     "params": {"n_requests": 6000, "n_keys": 300, "alpha": 1.2, "sizes": "fixed:2000"}},
    {"name": "bronze", "qos": "bronze", "trace": "synthetic:zipf", "rate": 20, "seed": 2,
     "params": {"n_requests": 6000, "n_keys": 2000, "alpha": 0.7, "sizes": "fixed:4000"}}]}  # fmt: skip


def _one_line(res, match: str, cls: type[Exception] = ConfigError) -> str:  # noqa: ANN001
    assert isinstance(res.exception, cls), (res.exception, res.output)
    msg = str(res.exception)
    assert match in msg and "\n" not in msg, msg
    return msg


@pytest.fixture()
def workload(tmp_path: Path) -> Path:
    p = tmp_path / "wl.yaml"
    p.write_text(yaml.safe_dump(WORKLOAD))
    return p


@pytest.mark.parametrize(("args", "match"), [
    (["--memory", "-1"], "--memory: a share of the working set must be a finite number in (0, 100], got -1.0"),
    (["--memory", "nan"], "--memory: a share of the working set must be a finite number in (0, 100], got nan"),
    (["--memory", "inf"], "got inf"),
    (["--memory", "0"], "--memory: a share"),  # 0 B would be maxmemory 0 = unlimited in Redis
    (["--memory", "1e30"], "--memory: a share"),
    (["--interval", "0"], "--interval: seconds per interval must be a finite number > 0, got 0.0"),
    (["--interval", "-5"], "--interval: seconds per interval"),
    (["--interval", "nan"], "--interval: seconds per interval"),
])  # fmt: skip
def test_compare_refuses_bad_memory_and_interval(args: list[str], match: str) -> None:
    _one_line(runner.invoke(app, [*COMPARE, *args]), match)


def test_compare_memory_share_that_rounds_to_zero_bytes() -> None:
    msg = _one_line(runner.invoke(app, [*COMPARE, "--memory", "1e-9"]), "--memory: 1e-09 x the working set of bundled:web07")
    assert "unlimited" in msg


def test_compare_unknown_eviction_lists_the_valid_ones() -> None:
    msg = _one_line(runner.invoke(app, [*COMPARE, "--eviction", "lru"]), "--eviction 'lru': unknown maxmemory-policy",
                    UnknownNameError)  # fmt: skip
    assert "allkeys-lru" in msg and "volatile-ttl" in msg


def test_compare_bad_option_through_the_entry_point() -> None:
    """The real entry point: ``error: ...`` on one line of stderr, exit code 2."""
    res = subprocess.run([sys.executable, "-m", "cachetuner.cli.main", *COMPARE, "--interval", "0"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().splitlines() == ["error: --interval: seconds per interval must be a finite number > 0, got 0.0"]


@pytest.mark.parametrize(("args", "match"), [
    (["--memory", "-1"], "--memory: a share"),
    (["--memory", "nan"], "--memory: a share"),
    (["--memory", "0"], "--memory: a share"),
    (["--interval", "0"], "--interval: seconds per interval"),
    (["--interval", "-1"], "--interval: seconds per interval"),
    (["--warmup", "-1"], "--warmup: cold-start intervals must be >= 0, got -1"),
    (["--warmup", "100000"], "--warmup: 100000 warmup intervals leave none of the 5 intervals of 60 s"),
    (["--warmup", "5"], "--warmup: 5 warmup intervals leave none"),
    (["--figure", "x.txt"], "--figure x.txt: expected a file ending in .png, .svg, .pdf"),
    (["--figure", "noext"], "--figure noext: expected a file ending in .png"),
    (["--figure", "no/such/folder/p95.png"], "--figure no/such/folder/p95.png: folder no/such/folder does not exist"),
])  # fmt: skip
def test_tenants_refuses_bad_options(workload: Path, args: list[str], match: str) -> None:
    _one_line(runner.invoke(app, ["ttl", "tenants", "--workload", str(workload), "--no-track", *args]), match)


def test_tenants_refuses_a_directory_as_figure(workload: Path, tmp_path: Path) -> None:
    d = tmp_path / "figs"
    d.mkdir()
    _one_line(runner.invoke(app, ["ttl", "tenants", "--workload", str(workload), "--no-track", "--figure", str(d)]),
              f"--figure {d}: a directory")  # fmt: skip
    assert not d.with_suffix(".png").exists()


def test_tenants_svg_figure(workload: Path, tmp_path: Path) -> None:
    fig = tmp_path / "p95.svg"
    res = runner.invoke(app, ["ttl", "tenants", "--workload", str(workload), "--no-track", "--warmup", "2",
                              "--figure", str(fig), "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert fig.read_text().lstrip().startswith("<?xml")


@pytest.mark.parametrize(("edit", "field"), [
    (lambda w: w["tenants"][1].update(seed=-1), "field 'tenants.1.seed'"),
    (lambda w: w.update(freshness={"seed": -1}), "field 'freshness.seed'"),
])  # fmt: skip
def test_workload_seeds_must_be_non_negative(tmp_path: Path, edit, field: str) -> None:  # noqa: ANN001
    w = yaml.safe_load(yaml.safe_dump(WORKLOAD))
    edit(w)
    p = tmp_path / "seed.yaml"
    p.write_text(yaml.safe_dump(w))
    _one_line(runner.invoke(app, ["ttl", "tenants", "--workload", str(p), "--no-track"]), f"{p}: {field}: ")


def test_a_tenant_trace_that_cannot_be_read_names_file_and_tenant(tmp_path: Path) -> None:
    w = yaml.safe_load(yaml.safe_dump(WORKLOAD))
    w["tenants"][1]["params"]["alpha"] = "steep"
    p = tmp_path / "param.yaml"
    p.write_text(yaml.safe_dump(w))
    with pytest.raises(CacheTunerError, match=rf"^{p}: field 'tenants.1': tenant bronze: synthetic:zipf: param 'alpha'"):
        load_tenant_workload(p)


def test_library_checks(web07: Trace, workload: Path) -> None:
    """The same checks where the library is called directly (names are the parameters')."""
    with pytest.raises(ConfigError, match="^interval_s: seconds per interval"):
        simulate_ttl(web07, "fixed:300", RedisConfig(maxmemory=10**6), interval_s=0.0)
    tr = load_tenant_workload(workload)
    with pytest.raises(ConfigError, match="^warmup: 50 warmup intervals leave none of the 5"):
        qos_experiment(tr, warmup=50)
    with pytest.raises(ConfigError, match="^memory_share: a share"):
        qos_experiment(tr, memory_share=float("nan"), warmup=1)
