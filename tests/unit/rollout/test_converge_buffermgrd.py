"""The rollout worker's own check, from its fresh read, of the lossless invariants with the
headroom buffermgrd's profile gives a port (docs/lossless.md, "The invariants"): the profile
may have appeared since the plan's facts were recorded; nothing is written when they break."""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.intent.models import Intent
from controller.rollout.switches import converge_switch
from controller.sonic.coexist import lossless_claim
from controller.sonic.compile import compile_switch
from controller.sonic.model import Fields, SwitchConfig
from tests.unit.reconcile.fakes import FakeSwitch
from tests.unit.sonic.test_buffermgrd import LOOKUP, S6000_LOOKUP, lossless_intent
from tests.unit.sonic.test_coexist_lossless import operator


@dataclass
class Records:
    """Adoption records: none held; what was adopted, by whom."""

    adopted: list[str] = field(default_factory=list)

    def baseline(self, switch: str) -> SwitchConfig | None:
        return None

    def adopt(self, switch: str, baseline: SwitchConfig, by: str) -> None:
        self.adopted.append(switch)

    def release(self, switch: str, by: str) -> None:
        raise AssertionError("nothing is released going forward")


def running_with(profile: Fields) -> FakeSwitch:
    """td2 in the traditional model, buffermgrd's lookup profile for its ports in CONFIG_DB."""
    config = operator(groups=True, model="traditional")
    config[("BUFFER_PROFILE", LOOKUP)] = dict(profile)
    return FakeSwitch(config, writes=True)


def forward(fake: FakeSwitch, records: Records, intent: Intent | None) -> str:
    declared = lossless_intent()
    converged = converge_switch(
        fake,
        declared.switches[0],
        compile_switch(declared, declared.switches[0]),
        {},
        allow_port_flaps=True,
        adoptions=records,
        by="rollout 1",
        claim=lossless_claim(declared),
        intent=intent,
    )
    return f"{converged.result.status}: {converged.result.reason}"


def test_the_worker_refuses_unwritten_where_buffermgrds_profile_breaks_kmax_below_xoff() -> None:
    fake, records = running_with(S6000_LOOKUP), Records()
    said = forward(fake, records, lossless_intent())
    assert said.startswith(
        "failed: not written: buffermgrd's headroom on the switch breaks the lossless "
        "invariants: service_classes[1].lossless.kmax_bytes: BuffermgrdKmaxAboveXoff: leaf1 "
        "Ethernet0 priority 2: Kmax 200000 B is not below the XOFF point 104848 B"
    )
    assert LOOKUP in said
    assert (fake.applied, records.adopted) == ([], [])


def test_the_worker_writes_where_the_profile_is_roomier_or_going_back() -> None:
    roomier = running_with(S6000_LOOKUP | {"dynamic_th": "0"})
    records = Records()
    assert forward(roomier, records, lossless_intent()).startswith("applied_verified")
    assert records.adopted == ["leaf1"]
    # A rollback (no intent to hold to) restores whatever the profile says.
    back = running_with(S6000_LOOKUP)
    assert forward(back, Records(), None).startswith("applied_verified")
    assert back.applied
