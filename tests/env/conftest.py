"""Fixtures of the env tests."""

from __future__ import annotations

import pytest
from env_testlib import small_cfg

from cachetuner.env import EnvConfig


@pytest.fixture
def cfg() -> EnvConfig:
    return small_cfg()
