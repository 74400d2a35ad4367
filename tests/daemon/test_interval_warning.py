"""The daemon says so when a live decider runs at another interval than the 10 s its rule was measured at."""

from __future__ import annotations

import logging

import pytest

from cachetuner.control import ControlSettings
from cachetuner.control.mrc import MRCController
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
