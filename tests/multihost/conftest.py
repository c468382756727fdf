"""Fixtures of the simulated-host tests: the hosts, skipped with the reason where they cannot be
simulated (unshare not permitted, not root, /etc/hosts not writable)."""
from __future__ import annotations

import pytest

from simhosts import SimHosts, unavailable


@pytest.fixture
def sim(tmp_path):
    reason = unavailable()
    if reason is not None:
        pytest.skip(f"simulated hosts unavailable: {reason}")
    hosts = SimHosts(tmp_path)
    try:
        yield hosts
    finally:
        hosts.close()
