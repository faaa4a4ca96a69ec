"""SONiC's traditional buffer manager, as sluice plans around it. Pure.

In SONiC's traditional buffer model buffermgrd (sonic-swss ``cfgmgr/buffermgr.cpp``,
``doSpeedUpdateTask``) writes a port's lossless priority groups into CONFIG_DB itself: when a
port with a ``CABLE_LENGTH`` (other than ``0m``) and a known admin status gets or changes its
``PORT_QOS_MAP`` ``pfc_enable``, or its speed or cable changes, it writes
``BUFFER_PG|<port>|<the pfc_enable priorities as ranges>`` (``3,4`` -> ``3-4``;
``generateIdListFromMap``) with its lookup-table profile ``pg_lossless_<speed>_<cable>_profile``
(``pg_profile_lookup.ini``; the profile is created if CONFIG_DB lacks it), unless that key
already names that profile. It never deletes a group it wrote when ``pfc_enable`` shrinks
(only on an admin-down port of a Mellanox or Barefoot platform). A switch runs this model
unless ``DEVICE_METADATA|localhost`` ``buffer_model`` is ``dynamic`` (``doBufferMetaTask``: any
other value, or none, is traditional); in the dynamic model buffermgrd computes headroom in
APPL_DB and leaves CONFIG_DB's groups alone.

So on such a port a ``BUFFER_PG`` of sluice's beside buffermgrd's would be a second, overlapping
group for the same priority (and sluice's key would be overwritten with buffermgrd's profile
wherever they coincide), and the group buffermgrd writes for a priority sluice enabled
outlives a release. Hence the rules:

- ``buffermgrd_ports``: the ports whose lossless groups buffermgrd writes, from what sluice
  keeps of a switch (``buffer_facts``: ``DEVICE_METADATA|localhost`` ``buffer_model`` and
  ``CABLE_LENGTH``, held in the operator's baseline, ``controller/sonic/coexist.py``);
- ``leave_headroom``: sluice writes no ``BUFFER_PG`` (nor its lossless profile) on those
  ports: PFC, the maps and the watchdog only; the headroom is buffermgrd's;
- ``buffermgrd_leftovers``: the groups buffermgrd wrote because of a priority sluice
  enabled, which no longer match the port's ``pfc_enable``, and the lookup-table profiles only
  they used: the diff deletes them (as sluice's own), so a release gives the switch back as it
  was;
- ``check_left_headroom``: the lossless invariants (headroom fits, Kmax below XOFF;
  ``controller/qos/lossless.py``) on those ports with the figures the switch runs, its
  lookup-table profile where CONFIG_DB holds it, instead of the intent's own headroom.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from controller.errors import (
    BuffermgrdHeadroomDoesNotFit,
    BuffermgrdKmaxAboveXoff,
    HeadroomDoesNotFit,
    KmaxAboveXoff,
)
from controller.intent.models import Intent
from controller.qos.buffers import DYNAMIC_TH_MAX, DYNAMIC_TH_MIN
from controller.qos.lossless import Headroom, LosslessQueue, port_lossless
from controller.sonic.context import PREFIX
from controller.sonic.model import EntryKey, Fields, SwitchConfig
from controller.sonic.tables.buffer_pg import pg_ranges

DEVICE_METADATA = "DEVICE_METADATA"
LOCALHOST = "localhost"
CABLE_LENGTH = "CABLE_LENGTH"
BUFFER_MODEL = "buffer_model"
# Kept beside the buffer model: which ASIC takes a PFC priority -> group map
# (controller/sonic/asic.py).
PLATFORM = "platform"
DYNAMIC = "dynamic"
TRADITIONAL = "traditional"
NO_CABLE = "0m"  # buffermgrd writes no group for it
# What sluice keeps of a switch to know where buffermgrd writes lossless groups.
BUFFER_FACT_TABLES = (CABLE_LENGTH, DEVICE_METADATA)
_LOOKUP_PROFILE = re.compile(r"pg_lossless_[0-9]+_[0-9.]+m_profile")


def buffer_model(metadata: Mapping[str, str] | None) -> str:
    """The switch's buffer model from its ``DEVICE_METADATA|localhost``: ``dynamic`` only when
    it says so, else ``traditional``, as buffermgrd reads it."""
    return DYNAMIC if (metadata or {}).get(BUFFER_MODEL) == DYNAMIC else TRADITIONAL


def buffer_facts(config: SwitchConfig) -> SwitchConfig:
    """The entries of ``config`` that say where buffermgrd writes lossless groups: every
    ``CABLE_LENGTH`` entry, and ``DEVICE_METADATA|localhost`` reduced to its buffer model
    (and its platform, where it has one: whether the ASIC takes a PFC priority -> group map,
    ``controller/sonic/asic.py``)."""
    facts: SwitchConfig = {
        key: dict(fields) for key, fields in config.items() if key[0] == CABLE_LENGTH
    }
    metadata = config.get((DEVICE_METADATA, LOCALHOST))
    if metadata is not None:
        kept = {BUFFER_MODEL: buffer_model(metadata)}
        if metadata.get(PLATFORM):
            kept[PLATFORM] = metadata[PLATFORM]
        facts[(DEVICE_METADATA, LOCALHOST)] = kept
    return facts


def buffermgrd_ports(facts: SwitchConfig) -> dict[str, str]:
    """port -> its cable (``5m``) for every port whose lossless groups buffermgrd writes:
    none on a dynamic-model switch; on a traditional one, each port with a ``CABLE_LENGTH``
    other than ``0m``."""
    if buffer_model(facts.get((DEVICE_METADATA, LOCALHOST))) == DYNAMIC:
        return {}
    return {
        port: cable.strip()
        for (table, _), fields in sorted(facts.items())
        if table == CABLE_LENGTH
        for port, cable in fields.items()
        if cable.strip() and cable.strip() != NO_CABLE
    }


def lookup_profile_name(speed_mbps: str, cable: str) -> str:
    """``pg_lossless_40000_5m_profile``: the profile buffermgrd gives a port of that speed
    (CONFIG_DB ``PORT`` ``speed``, Mb/s) and cable."""
    return f"pg_lossless_{speed_mbps}_{cable}_profile"


def _port_of(key: str) -> str:
    return key.partition("|")[0]


def priorities_of(text: str | None) -> frozenset[int]:
    """``3,4`` -> {3, 4}: a PFC priority list (``pfc_enable``, ``pfcwd_sw_enable``)."""
    if not text:
        return frozenset()
    return frozenset(int(p) for p in text.split(",") if p.strip().isdigit())


def pg_groups(key: str) -> frozenset[int]:
    """The priority groups of a ``BUFFER_PG`` key ``<port>|3`` or ``<port>|3-4``."""
    low, _, high = key.partition("|")[2].partition("-")
    if not low.isdigit() or (high and not high.isdigit()):
        return frozenset()
    return frozenset(range(int(low), int(high or low) + 1))


def leave_headroom(desired: SwitchConfig, facts: SwitchConfig) -> SwitchConfig:
    """``desired`` without sluice's ``BUFFER_PG`` entries on the ports buffermgrd writes
    lossless groups on, and without sluice's lossless ingress profiles no group names then.
    ``desired`` itself when no such port has one."""
    ports = buffermgrd_ports(facts)
    dropped = {
        (table, key)
        for (table, key), fields in desired.items()
        if table == "BUFFER_PG" and _port_of(key) in ports and _is_sluice(fields.get("profile"))
    }
    if not dropped:
        return desired
    kept = {k: v for k, v in desired.items() if k not in dropped}
    named = {f.get("profile") for (t, _), f in kept.items() if t == "BUFFER_PG"}
    gone = {f.get("profile") for k, f in desired.items() if k in dropped} - named
    return {
        (table, key): fields
        for (table, key), fields in kept.items()
        if not (table == "BUFFER_PROFILE" and key in gone)
    }


def _is_sluice(name: str | None) -> bool:
    return name is not None and name.startswith(PREFIX)


@dataclass(frozen=True)
class LookupHeadroom:
    """A lookup-table profile as the lossless invariants read it: its groups' ``headroom``
    (xon, xoff, size) and the shared-buffer ``dynamic_th`` its groups' XOFF point follows.

    buffermgrd writes all four from a ``pg_profile_lookup.ini`` row (sonic-swss
    ``cfgmgr/buffermgr.h`` ``pg_profile_t``: size, xon, xon_offset, xoff, threshold; the
    threshold becomes ``dynamic_th``). ``size`` is what one group reserves, its xoff inside it,
    as in the intent's own profiles (SONiC's vs/Force10-S6000 table, 40 Gb/s 5 m: size 56 368,
    xon 18 432, xoff 55 120, threshold -3)."""

    headroom: Headroom
    dynamic_th: int

    def describe(self) -> str:
        room = self.headroom
        return (
            f"size {room.size_bytes} B, xoff {room.xoff_bytes} B, xon {room.xon_bytes} B, "
            f"dynamic_th {self.dynamic_th}"
        )


def _byte_count(text: str | None) -> int | None:
    return int(text) if text is not None and text.strip().isdigit() else None


def lookup_headroom(fields: Fields | None) -> LookupHeadroom | None:
    """The invariants' figures of a ``BUFFER_PROFILE``: None when there is none, or when one
    of ``xon``, ``xoff``, ``size`` is not a whole number of bytes or ``dynamic_th`` not an
    integer SONiC's YANG allows (-8..7): then nothing the switch runs can be checked."""
    if fields is None:
        return None
    xon, xoff, size = (_byte_count(fields.get(name)) for name in ("xon", "xoff", "size"))
    try:
        dynamic_th = int(fields.get("dynamic_th", ""))
    except ValueError:
        return None
    if xon is None or xoff is None or size is None:
        return None
    if not DYNAMIC_TH_MIN <= dynamic_th <= DYNAMIC_TH_MAX:
        return None
    return LookupHeadroom(Headroom(xon, xoff, size), dynamic_th)


@dataclass(frozen=True)
class LeftToBuffermgrd:
    """What a plan says of a port buffermgrd writes lossless groups on: the groups it will
    write (``keys``), its lookup-table profile, that profile's fields where CONFIG_DB holds it
    (None: buffermgrd creates it from the switch's ``pg_profile_lookup.ini``, which sluice
    does not read), and the fields the intent's own headroom would have given it."""

    port: str
    keys: tuple[str, ...]
    profile: str
    profile_fields: Fields | None
    intent_profile: str
    intent_fields: Fields

    def differs(self) -> tuple[str, ...]:
        """The headroom fields (``xon``, ``xoff``, ``size``) where the intent's figures and
        buffermgrd's known profile differ; empty when the profile is not known."""
        if self.profile_fields is None:
            return ()
        return tuple(
            name
            for name in ("xon", "xoff", "size")
            if self.profile_fields.get(name) != self.intent_fields.get(name)
        )

    def lookup(self) -> LookupHeadroom | None:
        """The profile's figures the invariants are checked with; None: the intent's are."""
        return lookup_headroom(self.profile_fields)

    def note(self) -> str:
        keys = ", ".join(f"BUFFER_PG|{self.port}|{k}" for k in self.keys)
        said = f"{self.port}: headroom is buffermgrd's ({keys} on {self.profile}, its lookup table)"
        differs = self.differs()
        if self.profile_fields is None:
            return said + (
                "; the switch has no such profile yet: its figures are the switch's own, and "
                "the lossless invariants are checked with the intent's"
            )
        if self.lookup() is None:
            said += (
                "; its xon, xoff, size or dynamic_th cannot be read: the lossless invariants "
                "are checked with the intent's figures"
            )
        else:
            said += "; the lossless invariants are checked with its figures"
        if not differs:
            return said + f", as the intent sizes it ({self.intent_profile})"
        shown = ", ".join(
            f"{n} {self.profile_fields.get(n)} (intent {self.intent_fields.get(n)})"
            for n in differs
        )
        return said + f"; they differ from the intent's {self.intent_profile}: {shown}"


def headroom_notes(
    desired: SwitchConfig, want: SwitchConfig, facts: SwitchConfig, observed: SwitchConfig
) -> list[LeftToBuffermgrd]:
    """One ``LeftToBuffermgrd`` per port whose ``BUFFER_PG`` ``leave_headroom`` drops from
    ``desired`` (what the compiler made, before coexisting): the groups buffermgrd will write
    for the port's ``pfc_enable`` in ``want`` (what sluice writes), its profile from the
    port's speed (``observed`` ``PORT``) and cable, and how its figures compare with the
    intent's."""
    ports = buffermgrd_ports(facts)
    notes: list[LeftToBuffermgrd] = []
    seen: set[str] = set()
    for (table, key), fields in desired.items():
        port = _port_of(key)
        if table != "BUFFER_PG" or port not in ports or port in seen:
            continue
        if not _is_sluice(fields.get("profile")):
            continue
        seen.add(port)
        speed = observed.get(("PORT", port), {}).get("speed", "?")
        name = lookup_profile_name(speed, ports[port])
        enabled = priorities_of(want.get(("PORT_QOS_MAP", port), {}).get("pfc_enable"))
        own = fields["profile"]
        notes.append(
            LeftToBuffermgrd(
                port,
                tuple(pg_ranges(enabled)),
                name,
                observed.get(("BUFFER_PROFILE", name)),
                own,
                desired.get(("BUFFER_PROFILE", own), {}),
            )
        )
    return notes


def check_left_headroom(intent: Intent, switch: str, notes: Sequence[LeftToBuffermgrd]) -> None:
    """The lossless invariants (``controller/qos/lossless.py`` ``port_lossless``) on each
    port of ``switch`` in ``notes`` whose lookup-table profile the switch's CONFIG_DB holds,
    with that profile's figures: its ``size`` per group and its ``dynamic_th`` for the XOFF
    point, against the port's buffer as the intent declares it and the intent's lossless
    priorities (the operator's own priorities on the port are not counted, as in the intent's
    check, ``controller/intent/capacity.py`` ``lossless_buffers_fit``). A port whose profile
    is absent or unreadable keeps the intent's check, which validation already ran.

    Raises BuffermgrdHeadroomDoesNotFit (at the port's ``buffer_bytes``) or
    BuffermgrdKmaxAboveXoff (at the class's ``lossless.kmax_bytes``) for the first port, in
    ``notes``' order, that breaks one."""
    if intent.fabric.lossless is None:
        return
    classes = [
        (i, c, c.lossless) for i, c in enumerate(intent.service_classes) if c.lossless is not None
    ]
    if not classes:
        return
    queues = [LosslessQueue(lossless.pfc_priority, c.dcqcn) for _, c, lossless in classes]
    kmax_path = {
        lossless.pfc_priority: f"service_classes[{i}].lossless.kmax_bytes"
        for i, _, lossless in classes
    }
    for i, declared in enumerate(intent.switches):
        if declared.name != switch:
            continue
        ports = {port.name: (j, port) for j, port in enumerate(declared.ports)}
        for note in notes:
            theirs = note.lookup()
            if theirs is None or note.port not in ports:
                continue
            j, port = ports[note.port]
            where = f"{switch} {note.port}"
            try:
                port_lossless(
                    where,
                    port.buffer_bytes or intent.fabric.port_buffer_bytes,
                    queues,
                    theirs.headroom,
                    dynamic_th=theirs.dynamic_th,
                )
            except KmaxAboveXoff as refused:
                raise BuffermgrdKmaxAboveXoff(
                    kmax_path[refused.priority],
                    where,
                    refused.priority,
                    refused.kmax_bytes,
                    refused.xoff_point_bytes,
                    profile=note.profile,
                    figures=theirs.describe(),
                ) from None
            except HeadroomDoesNotFit as refused:
                raise BuffermgrdHeadroomDoesNotFit(
                    f"switches[{i}].ports[{j}].buffer_bytes",
                    where,
                    refused.priority,
                    refused.headroom_bytes,
                    refused.buffer_bytes,
                    profile=note.profile,
                    size_bytes=theirs.headroom.size_bytes,
                ) from None


def buffermgrd_leftovers(
    observed: SwitchConfig, baseline: SwitchConfig, was: SwitchConfig, want: SwitchConfig
) -> SwitchConfig:
    """What buffermgrd wrote because of sluice that must go now (``observed``: the switch as
    read; ``was``: what sluice wrote there before, ``want``: what it writes now, both as
    written, after coexisting): each ``BUFFER_PG`` the operator's ``baseline`` lacks, naming a
    profile that is not sluice's, whose groups hold a priority sluice added to the port's
    ``pfc_enable`` and whose key is not one buffermgrd writes for the port's ``pfc_enable``
    from now on (``want``'s, else the baseline's); and each lookup-table profile
    (``pg_lossless_<speed>_<cable>_profile``) the baseline lacks that no other group names.
    The diff deletes them as sluice's own (``owned``)."""
    gone: SwitchConfig = {}
    for (table, key), fields in sorted(observed.items()):
        if table != "BUFFER_PG" or (table, key) in baseline or (table, key) in want:
            continue
        if _is_sluice(fields.get("profile")):
            continue
        port = _port_of(key)
        theirs = priorities_of(baseline.get(("PORT_QOS_MAP", port), {}).get("pfc_enable"))
        added = priorities_of(was.get(("PORT_QOS_MAP", port), {}).get("pfc_enable")) - theirs
        if not pg_groups(key) & added:
            continue
        now = want.get(("PORT_QOS_MAP", port), baseline.get(("PORT_QOS_MAP", port), {}))
        if key.partition("|")[2] in pg_ranges(priorities_of(now.get("pfc_enable"))):
            continue
        gone[(table, key)] = dict(fields)
    named = {f.get("profile") for k, f in observed.items() if k[0] == "BUFFER_PG" and k not in gone}
    for key_fields in list(gone.values()):
        profile = key_fields.get("profile", "")
        entry: EntryKey = ("BUFFER_PROFILE", profile)
        if (
            _LOOKUP_PROFILE.fullmatch(profile)
            and profile not in named
            and entry in observed
            and entry not in baseline
        ):
            gone[entry] = dict(observed[entry])
    return gone
