"""Bad numeric input to ``simulate`` / ``bench sim`` and the simulator API: one line naming the option or field,
exit code 2, never a traceback, a hang, an overflow or a silently truncated value (fuzz findings D1, A2, A4, A5, C5)."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from pydantic import ValidationError
from simtraces import make_trace

from cachetuner.cli.main import main
from cachetuner.config import RedisConfig
from cachetuner.errors import ConfigError
from cachetuner.sim import SimParams, TieredCacheSim
from cachetuner.sim.params import MAX_BYTES, REDIS_INT_MAX, LatencyParams, MemoryParams
from cachetuner.sim.result import MAX_INTERVALS, interval_bounds
from cachetuner.sim.sizing import parse_size

SIM = ("simulate", "--trace", "bundled:web07", "--limit", "2000")


def _cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """Run the real entry point in-process: (exit code, stderr)."""
    monkeypatch.setattr(sys, "argv", ["cachetuner", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    return int(exit_info.value.code or 0), capsys.readouterr().err


def _one_line_error(code: int, err: str, *needles: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


# ---------------------------------------------------------------- D1 / A2: interval count and duration
def test_tiny_rate_is_refused_at_once_not_hung():
    """D1: --rate=1e-6 stretched 2,000 requests over 63 years: 33 million 60 s windows ran for minutes."""
    p = subprocess.run(
        [sys.executable, "-c", "from cachetuner.cli.main import main; main()", *SIM, "--rate=1e-6"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    _one_line_error(p.returncode, p.stderr, "--interval", "--rate", "s long", f"{MAX_INTERVALS:,}")


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("--interval", "1e-9"), ("--interval=1e-09", "1.999 s long", "use --interval")),  # D1: grew to 24 GB
        (("--rate=1e-300",), ("--interval", "--rate")),  # A2: "Maximum allowed size exceeded"
        (("--interval", "nan"), ("--interval=nan",)),
        (("--interval", "inf"), ("--interval=inf",)),
        (("--interval", "-1"), ("--interval=-1",)),
        (("--interval", "0"), ("--interval=0",)),
    ],
)
def test_bad_interval_is_one_line(monkeypatch, capsys, args, needles):
    _one_line_error(*_cli(monkeypatch, capsys, *SIM, *args), *needles)


def test_interval_bounds_caps_the_window_count():
    tr = make_trace([0, 1, 2, 3], timestamps=[0.0, 1.0, 2.0, 1e9])
    with pytest.raises(ConfigError, match=r"--interval=1 s cuts trace test \(1e\+09 s long\)") as e:
        interval_bounds(tr, 1.0)
    assert "\n" not in str(e.value)
    advised = float(str(e.value).split("use --interval ")[1].split()[0])
    assert 1e9 / advised + 1 <= MAX_INTERVALS  # the advice works
    assert len(interval_bounds(tr, advised)) <= MAX_INTERVALS
    assert len(interval_bounds(tr, 1e9 / (MAX_INTERVALS - 1))) == MAX_INTERVALS  # the cap itself is allowed


def test_interval_bounds_refuses_non_finite_input():
    tr = make_trace([0, 1, 2])
    for bad in (math.nan, math.inf, -1.0):
        with pytest.raises(ConfigError, match="--interval"):
            interval_bounds(tr, bad)
    endless = make_trace([0, 1], timestamps=[0.0, math.inf])
    with pytest.raises(ConfigError, match="duration is inf s.*--rate"):
        interval_bounds(endless, 60.0)
    assert interval_bounds(tr, 0.0) == [(0, 3, 2.0)]  # 0: one window, as before
    assert interval_bounds(tr, 1.0) == [(0, 1, 1.0), (1, 2, 2.0), (2, 3, 3.0)]


# ---------------------------------------------------------------- A4 / A5 / C5: option ranges
@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("--maxmemory", "99999999999999999999999"), ("--maxmemory", "2^60")),
        (("--l2-capacity", "99999999999999999999999"), ("--l2-capacity", "2^60")),
        (("--accounting", "exact", "--l2-capacity", "99999999999999999999999"), ("--l2-capacity",)),
        (("--per-key-overhead", "99999999999999999999"), ("--per-key-overhead=99999999999999999999",)),
        (("--base-memory", "99999999999999999999"), ("--base-memory=99999999999999999999",)),
        (("--lfu-decay-time", "99999999999999999999"), ("--lfu-decay-time", "INT_MAX")),
        (("--timeout", "99999999999999999999"), ("--timeout", "INT_MAX")),
        (("--clients", "99999999999"), ("--clients=99999999999", "100000")),
        (("--maxmemory", "1.5"), ("--maxmemory='1.5'", "whole")),
        (("--maxmemory", "0.1kb"), ("--maxmemory='0.1kb'", "102.4 bytes")),
        (("--l2-capacity", "1.5"), ("--l2-capacity='1.5'", "whole")),
        (("--sim-seed", str(2**64)), ("--sim-seed",)),
    ],
)
def test_out_of_range_option_is_one_line(monkeypatch, capsys, args, needles):
    _one_line_error(*_cli(monkeypatch, capsys, *SIM, *args), *needles)


def test_bench_sim_huge_maxmemory_is_one_line(monkeypatch, capsys):
    code, err = _cli(monkeypatch, capsys, "bench", "sim", "--trace", "bundled:web07", "--limit", "1000",
                     "--maxmemory", "99999999999999999999999")  # fmt: skip
    _one_line_error(code, err, "--maxmemory", "2^60")


def test_limits_themselves_still_run(monkeypatch, capsys):
    code, err = _cli(monkeypatch, capsys, *SIM, "--maxmemory", str(MAX_BYTES), "--lfu-decay-time", str(REDIS_INT_MAX),
                     "--timeout", str(REDIS_INT_MAX), "--clients", "100000", "--json")  # fmt: skip
    assert code == 0, err


def test_parse_size_refuses_fractions_and_huge_sizes():
    assert parse_size("1.5GiB") == 3 * 2**29  # exact, no float rounding
    assert parse_size("1.5k") == 1500
    assert parse_size(str(MAX_BYTES)) == MAX_BYTES
    for text, needle in (("1.5", "whole"), ("0.1kb", "102.4"), (str(MAX_BYTES + 1), "2^60"), ("2000000tb", "2^60")):
        with pytest.raises(ConfigError, match="--maxmemory") as e:
            parse_size(text, what="--maxmemory")
        assert needle in str(e.value)
    with pytest.raises(ConfigError, match="negative"):
        parse_size(-1, what="--budget")


# ---------------------------------------------------------------- the same limits through the API
def _unchecked(**fields: int) -> RedisConfig:
    """A RedisConfig with ``fields`` set past its validation: the simulator's own check is what is tested."""
    return RedisConfig().model_copy(update=fields)


def test_simulator_refuses_config_it_cannot_hold_in_one_line():
    with pytest.raises(ConfigError, match="^maxmemory=.*2\\^60"):
        TieredCacheSim(4, _unchecked(maxmemory=MAX_BYTES + 1))
    sim = TieredCacheSim(4, RedisConfig(maxmemory=10_000))
    for field in ("lfu_decay_time", "timeout"):
        with pytest.raises(ConfigError, match=f"^{field}=.*INT_MAX"):
            sim.apply_config(_unchecked(maxmemory=5_000, **{field: 2**63}))
    assert sim.config.maxmemory == 10_000  # a refused CONFIG SET changes nothing


def test_sim_params_bound_what_the_kernel_holds_in_int64():
    for bad in ({"per_key_overhead": 2**63}, {"base_used_memory": 2**63}, {"default_key_bytes": 2**40}):
        with pytest.raises(ValidationError):
            MemoryParams(**bad)
    with pytest.raises(ValidationError):
        LatencyParams(miss_ms=math.inf)
    with pytest.raises(ValidationError):
        SimParams.model_validate({"active_expire": {"period_s": math.nan}})


def test_redis_config_takes_what_redis_and_the_simulator_take() -> None:
    """A YAML config (an A/B arm's `config:`, a daemon bound) is checked where the simulator and CONFIG SET would
    refuse it: maxmemory up to 1 EiB, timeout and lfu-decay-time up to Redis's INT_MAX."""
    from pydantic import ValidationError

    from cachetuner.config import RedisConfig

    assert RedisConfig(maxmemory=1 << 60, timeout=2**31 - 1, lfu_decay_time=2**31 - 1).maxmemory == 1 << 60
    for bad in ({"maxmemory": 99999999999999999999999}, {"timeout": 2**31}, {"lfu_decay_time": 2**31}):
        with pytest.raises(ValidationError):
            RedisConfig(**bad)
