"""The daemon says so when a live decider runs at another interval than the 10 s its rule was measured at."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from cachetuner.control import ControlSettings
from cachetuner.control.learned import load_policy
from cachetuner.control.mrc import MRCController
from cachetuner.daemon.config import DaemonConfig
from cachetuner.daemon.loop import Daemon
from cachetuner.daemon.policy import _warn_interval
from cachetuner.env import EnvConfig
from cachetuner.mrc.rule_settings import resolve_reference

PER_INTERVAL = ControlSettings.model_validate({"mrc": {"reference_interval_s": None}})


def test_a_decider_off_the_measured_interval_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    ctl = MRCController(PER_INTERVAL)
    with caplog.at_level(logging.WARNING, logger="cachetuner.daemon"):
        _warn_interval("mrc", ctl, EnvConfig(), 60.0)
        assert "mrc at interval_s=60s" in caplog.text and "6.0x slower" in caplog.text
        caplog.clear()
        _warn_interval("mrc", ctl, EnvConfig(), 2.0)
        assert "5.0x faster" in caplog.text
        caplog.clear()
        _warn_interval("mrc", ctl, EnvConfig(), 10.3)  # the measured interval, give or take a live reading's jitter
        scaled = MRCController(ControlSettings.model_validate({"mrc": {"reference_interval_s": 10.0}}))
        _warn_interval("mrc", scaled, EnvConfig(), 60.0)  # its counts are scaled to the interval
        _warn_interval("hold", object(), EnvConfig(), 60.0)  # no rule to speak of
        _warn_interval("mrc", MRCController(ControlSettings()), EnvConfig(), 60.0)  # auto counts in wall time there
        assert caplog.text == ""
        _warn_interval("mrc", MRCController(ControlSettings()), EnvConfig(), 30.0)  # but not at 30 s
        assert "mrc at interval_s=30s" in caplog.text


def test_the_warning_says_what_the_default_does_at_the_interval(caplog: pytest.LogCaptureFixture) -> None:
    """At 57 s or more an unscaled rule means someone set ``policy.reference_interval_s: null`` (auto would have
    scaled it); below, auto leaves it per interval (rule four: dearer at 30 s), and the warning says how to force it."""
    ctl = MRCController(PER_INTERVAL)
    with caplog.at_level(logging.WARNING, logger="cachetuner.daemon"):
        _warn_interval("mrc", ctl, EnvConfig(), 60.0)
        assert "auto (the default) counts in wall time at 57 s or more" in caplog.text
        caplog.clear()
        _warn_interval("mrc", ctl, EnvConfig(), 30.0)
        assert "not applied by default" in caplog.text and "reference_interval_s: 10 forces it" in caplog.text


@pytest.mark.parametrize(("setting", "interval_s", "expected"), [
    ("auto", 60.0, 10.0), ("auto", 57.0, 10.0), ("auto", 120.0, 10.0), ("auto", 600.0, 10.0),
    ("auto", 56.9, None), ("auto", 30.0, None), ("auto", 10.0, None),
    (None, 60.0, None), (10.0, 30.0, 10.0), (20.0, 60.0, 20.0)])
def test_auto_counts_in_wall_time_from_57_s(setting: Any, interval_s: float, expected: float | None) -> None:
    """Rule five (docs/control.md): ``auto`` is the measured 10 s at 60 s decisions (less a live interval's 5 %
    drift) and slower, and per interval below; a number or null is taken as given."""
    assert resolve_reference(setting, interval_s) == expected


def test_policy_reference_interval_counts_the_rule_and_the_curves_in_wall_time(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """``policy.reference_interval_s`` (``auto`` by default since rule five, docs/control.md): at 60 s decisions the
    decider's rule (``mrc``'s settings, or the anchor the shipped policy offsets) and its curves count their intervals
    as 10 s, so a 60 s daemon confirms and gathers evidence as fast in wall time as at 10 s; at 30 s, or set to null,
    they keep what their configs say (per interval). A sim target's pace is its env's interval, not the daemon's."""

    def policy(interval_s: float = 60, **pol: Any) -> Any:
        env = {"workloads": [{"trace": "synthetic:zipf", "params": {"n_requests": 20000, "n_keys": 5000, "rate": 1000}}],
               "interval_s": interval_s, "episode_intervals": None, "warmup_intervals": 0,
               "bounds": {"min_bytes": 1_000_000, "max_bytes": 64_000_000, "initial_bytes": 24_000_000},
               "whatif": {"enabled": False}}
        cfg = DaemonConfig.model_validate({
            "interval_s": 0.001, "state_dir": str(tmp_path / "state"), "http": {"port": 0},
            "tracking": {"enabled": False}, "max_iterations": 1, "policy": {"checkpoint_intervals": None, **pol},
            "targets": [{"name": "t", "backend": "sim", "backend_options": {"env": env},
                         "bounds": {"maxmemory_min": 8_000_000, "maxmemory_max": 40_000_000}}]})
        d = Daemon(cfg)
        d.run()
        return d.runners[0].policy

    with caplog.at_level(logging.INFO, logger="cachetuner.daemon"):
        auto = policy(name="mrc")
    assert "t: decisions every 60s; the decider counts its confirmations" in caplog.text  # the operator is told
    assert "policy.reference_interval_s: auto" in caplog.text
    off, at_30 = policy(name="mrc", reference_interval_s=None), policy(30, name="mrc")
    for per_interval in (off, at_30):
        assert per_interval.controller.decider.settings.reference_interval_s is None
        assert per_interval.env.cfg.mrc.reference_interval_s is None
    assert at_30.controller.decider.rule.confirm == 3
    assert auto.controller.decider.settings.reference_interval_s == 10.0 == auto.env.cfg.mrc.reference_interval_s
    assert auto.controller.decider.rule.confirm == 1  # 3 intervals of 10 s are one of 60 s
    forced = policy(30, name="mrc", reference_interval_s=10.0)
    assert forced.controller.decider.rule.confirm == 1  # round(3 / 3)
    ppo = policy(name="ppo", model="default")
    anchor = ppo.env.cfg.mrc.anchor
    assert anchor is not None and anchor.reference_interval_s == 10.0 == ppo.env.cfg.mrc.reference_interval_s
    assert ppo.env._decider.rule.confirm == 1  # the anchor the policy offsets decides at 60 s in wall time
    assert {k: v for k, v in anchor.model_dump().items() if k != "reference_interval_s"} == {
        k: v for k, v in load_policy("default").env_config.mrc.anchor.model_dump().items() if k != "reference_interval_s"}
    ppo_30 = policy(30, name="ppo", model="default")
    assert ppo_30.env.cfg.mrc.anchor.reference_interval_s is None and ppo_30.env._decider.rule.confirm == 3
    for bad in (0, -5, "sometimes", True):
        with pytest.raises(ValidationError, match="reference_interval_s"):
            DaemonConfig.model_validate({"policy": {"reference_interval_s": bad}, "targets": []})
