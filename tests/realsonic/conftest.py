"""The real-SONiC tier: sluice against SONiC's own software (``lab/realsonic.py``).

The bundles are extracted once per machine (a cache keyed by their contents) and each switch
is started from them: its own redis in SONiC's layout, syncd + orchagent over libsaivs, and
SONiC's gNMI server with the real Generic Config Updater behind it. A switch takes about ten
seconds to start, so modules share one where their tests can.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lab.realsonic import RealSwitch, SonicBundle, SwitchParts, prepare_bundle

ROOT = Path(__file__).resolve().parents[2]
SLUICE_YANG = ROOT / "agents" / "qos-agent" / "yang" / "sonic-sluice-agent.yang"

pytestmark = pytest.mark.realsonic


@pytest.fixture(scope="session")
def sonic_bundle() -> SonicBundle:
    """SONiC's runtime bundles, extracted (and GCU's Python environment made) once."""
    return prepare_bundle()


StartSwitch = Callable[[SwitchParts], RealSwitch]


@pytest.fixture(scope="module")
def start_switch(sonic_bundle: SonicBundle) -> Iterator[StartSwitch]:
    """Starts real switches for one module; every one is stopped when the module ends."""
    started: list[RealSwitch] = []

    def start(parts: SwitchParts) -> RealSwitch:
        switch = RealSwitch(sonic_bundle, parts).start()
        started.append(switch)
        return switch

    yield start
    for switch in reversed(started):
        switch.stop()


def full_switch_parts() -> SwitchParts:
    """syncd + orchagent + buffermgrd, and CONFIG_DB Sets through the real GCU validating
    against SONiC's models and sluice's own (``sonic-sluice-agent.yang``)."""
    return SwitchParts(orchagent=True, buffermgrd=True, gcu=True, yang_extra=(SLUICE_YANG,))
