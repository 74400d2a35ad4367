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


def test_a_decider_off_the_measured_interval_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    ctl = MRCController(ControlSettings())
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
        assert caplog.text == ""


def test_policy_reference_interval_counts_the_rule_and_the_curves_in_wall_time(tmp_path: Path) -> None:
    """``policy.reference_interval_s`` (recommended at 60 s decisions by rule four, docs/control.md): the decider's
    rule (``mrc``'s settings, or the anchor the shipped policy offsets) and its curves count their intervals as that
    many seconds, so a 60 s daemon confirms and gathers evidence as fast in wall time as at 10 s; unset, they keep
    what their configs say (per interval)."""
    env = {"workloads": [{"trace": "synthetic:zipf", "params": {"n_requests": 20000, "n_keys": 5000, "rate": 1000}}],
           "interval_s": 60, "episode_intervals": None, "warmup_intervals": 0,
           "bounds": {"min_bytes": 1_000_000, "max_bytes": 64_000_000, "initial_bytes": 24_000_000},
           "whatif": {"enabled": False}}

    def policy(**pol: Any) -> Any:
        cfg = DaemonConfig.model_validate({
            "interval_s": 0.001, "state_dir": str(tmp_path / "state"), "http": {"port": 0},
            "tracking": {"enabled": False}, "max_iterations": 1, "policy": {"checkpoint_intervals": None, **pol},
            "targets": [{"name": "t", "backend": "sim", "backend_options": {"env": env},
                         "bounds": {"maxmemory_min": 8_000_000, "maxmemory_max": 40_000_000}}]})
        d = Daemon(cfg)
        d.run()
        return d.runners[0].policy

    plain, scaled = policy(name="mrc"), policy(name="mrc", reference_interval_s=10.0)
    assert plain.controller.decider.settings.reference_interval_s is None and plain.env.cfg.mrc.reference_interval_s is None
    assert scaled.controller.decider.settings.reference_interval_s == 10.0 == scaled.env.cfg.mrc.reference_interval_s
    assert scaled.controller.decider.rule.confirm == 1  # 3 intervals of 10 s are one of 60 s
    ppo = policy(name="ppo", model="default", reference_interval_s=10.0)
    anchor = ppo.env.cfg.mrc.anchor
    assert anchor is not None and anchor.reference_interval_s == 10.0 == ppo.env.cfg.mrc.reference_interval_s
    assert ppo.env._decider.rule.confirm == 1  # the anchor the policy offsets decides at 60 s in wall time
    assert {k: v for k, v in anchor.model_dump().items() if k != "reference_interval_s"} == {
        k: v for k, v in load_policy("default").env_config.mrc.anchor.model_dump().items() if k != "reference_interval_s"}
    with pytest.raises(ValidationError, match="reference_interval_s"):
        DaemonConfig.model_validate({"policy": {"reference_interval_s": 0}, "targets": []})
