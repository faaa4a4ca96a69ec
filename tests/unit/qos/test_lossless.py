"""Headroom (SONiC's dynamic buffer formula), DCQCN's ECN and the lossless invariants.

Worked example: the static table SONiC shipped for the Mellanox SN2700 (Spectrum-1),
sonic-buildimage device/mellanox/x86_64-mlnx_msn2700-r0/ACS-MSN2700/pg_profile_lookup.ini
(read from the fastiuk/sonic-buildimage mirror at e0d7a66), rows of speed, cable, size, xon,
xoff. Its platform is the one sonic-buildimage's files/build_templates/asic_table.j2 declares
for MELLANOX-SPECTRUM (cell_size 96, mac_phy_delay 0.8 KB, peer_response_time 3.8 KB; read
from the stephenxs/sonic-buildimage mirror at 761bdf3), with the LOSSLESS_TRAFFIC_PATTERN
defaults of SONiC's Configuration.md (mtu 1024, small_packet_percentage 100) and a port MTU
of 9216 B, the largest SONiC's PORT table takes (the HLD's default, 9100 B, does not reproduce
the table: test_the_table_pins_the_inputs). With those inputs every xoff of the table comes out
of the formula exactly.

What the table does not let us reproduce: its xon is 19 456 B (19 KB) where asic_table.j2
says pipeline_latency 18 KB; the table predates the dynamic model. The tests therefore take
the table's xon as the platform's pipeline latency and check size = xon + xoff, which holds on
every row.

Second worked example, the other branch of the worst-case factor (a cell above 128 B): the
SN4700 (Spectrum-3, cell_size 144 in asic_table.j2) table, device/mellanox/
x86_64-mlnx_msn4700-r0/ACS-MSN4700/pg_profile_lookup.ini (same mirror and commit), with the
same delays and traffic pattern: every xoff, 10 to 400 Gb/s, comes out exactly. Its 400 Gb/s
rows carry two vendor-only terms of the plugin's first version (sonic-swss 2cab51d,
"Adjustment for 400G"): a 37 KB pipeline latency and one port MTU more in size (later the
8-lane adjustment); neither is modelled, so those rows check xoff only.

Not checked: the SN3800 table (a gearbox platform), whose gearbox delay is not among the
published figures read here.
"""

from __future__ import annotations

import pytest

from controller.errors import HeadroomDoesNotFit, IntentInvalid, KmaxAboveXoff
from controller.qos.lossless import (
    DCQCN_PAPER,
    DcqcnEcn,
    Headroom,
    HeadroomPlatform,
    LosslessQueue,
    cable_bytes,
    cell_occupancy,
    headroom,
    pause_quanta,
    peer_response_bytes,
    port_lossless,
    worst_case_factor,
    xoff_point_bytes,
)

KB = 1024  # ASIC_TABLE's delays are in KB of 1024 B (the plugin multiplies them by 1024)

SPECTRUM_1 = HeadroomPlatform(
    cell_bytes=96,
    pipeline_latency_bytes=19 * KB,  # the table's xon; asic_table.j2 says 18 KB (see above)
    mac_phy_delay_bytes=0.8 * KB,
    peer_response_bytes=3.8 * KB,
    small_packet_pct=100,
    lossless_mtu_bytes=1024,
)

# speed (Gb/s), cable (m), size, xon, xoff: ACS-MSN2700/pg_profile_lookup.ini, every row.
MSN2700_TABLE = [
    (10, 5, 49152, 19456, 29696),
    (25, 5, 49152, 19456, 29696),
    (40, 5, 49152, 19456, 29696),
    (50, 5, 49152, 19456, 29696),
    (100, 5, 50176, 19456, 30720),
    (10, 40, 49152, 19456, 29696),
    (25, 40, 51200, 19456, 31744),
    (40, 40, 52224, 19456, 32768),
    (50, 40, 53248, 19456, 33792),
    (100, 40, 58368, 19456, 38912),
    (10, 300, 56320, 19456, 36864),
    (25, 300, 67584, 19456, 48128),
    (40, 300, 78848, 19456, 59392),
    (50, 300, 86016, 19456, 66560),
    (100, 300, 123904, 19456, 104448),
]


@pytest.mark.parametrize(("speed", "cable", "size", "xon", "xoff"), MSN2700_TABLE)
def test_sonic_msn2700_table_reproduced(speed, cable, size, xon, xoff):
    assert headroom(speed, cable, 9216, SPECTRUM_1) == Headroom(xon, xoff, size)


SPECTRUM_3 = HeadroomPlatform(
    cell_bytes=144,
    pipeline_latency_bytes=19 * KB,  # the table's xon below 400 Gb/s, as for the SN2700
    mac_phy_delay_bytes=0.8 * KB,
    peer_response_bytes=3.8 * KB,
)

# speed (Gb/s), cable (m), size, xon, xoff: ACS-MSN4700/pg_profile_lookup.ini, every row.
MSN4700_TABLE = [
    (10, 5, 52224, 19456, 32768),
    (25, 5, 52224, 19456, 32768),
    (40, 5, 53248, 19456, 33792),
    (50, 5, 53248, 19456, 33792),
    (100, 5, 53248, 19456, 33792),
    (200, 5, 55296, 19456, 35840),
    (400, 5, 86016, 37888, 38912),
    (10, 40, 53248, 19456, 33792),
    (25, 40, 55296, 19456, 35840),
    (40, 40, 57344, 19456, 37888),
    (50, 40, 58368, 19456, 38912),
    (100, 40, 63488, 19456, 44032),
    (200, 40, 74752, 19456, 55296),
    (400, 40, 124928, 37888, 77824),
    (10, 300, 60416, 19456, 40960),
    (25, 300, 73728, 19456, 54272),
    (40, 300, 86016, 19456, 66560),
    (50, 300, 95232, 19456, 75776),
    (100, 300, 137216, 19456, 117760),
    (200, 300, 223232, 19456, 203776),
    (400, 300, 420864, 37888, 373760),
]


@pytest.mark.parametrize(("speed", "cable", "size", "xon", "xoff"), MSN4700_TABLE)
def test_sonic_msn4700_table_reproduced(speed, cable, size, xon, xoff):
    room = headroom(speed, cable, 9216, SPECTRUM_3)
    assert room.xoff_bytes == xoff
    if speed < 400:  # the plugin's 400 Gb/s terms are not modelled (see the docstring)
        assert (room.xon_bytes, room.size_bytes) == (xon, size)


def test_the_table_pins_the_inputs():
    # The same rows with the port MTU SONiC uses today (9100) no longer match: the check
    # above can fail.
    at_9100 = [headroom(s, c, 9100, SPECTRUM_1).xoff_bytes for s, c, *_ in MSN2700_TABLE]
    assert at_9100 != [row[4] for row in MSN2700_TABLE]


def test_worst_case_factor_both_branches():
    # Spectrum-1's 96 B cell holds one 64 B packet: 2 x 96 / 97; a 144 B cell (Spectrum-2):
    # 144 / 64 = 2.25.
    assert worst_case_factor(96) == pytest.approx(192 / 97)
    assert worst_case_factor(144) == pytest.approx(2.25)
    assert cell_occupancy(144, 0) == pytest.approx(1.0)
    assert cell_occupancy(144, 50) == pytest.approx(1.625)


def test_cable_bytes_by_hand():
    # 300 m at 100 Gb/s: 300 / 1.98e8 s x 1.25e10 B/s = 18 939.39 B one way.
    assert cable_bytes(100, 300) == pytest.approx(300 / 198e6 * 100e9 / 8)
    assert cable_bytes(100, 0) == 0


def test_peer_response_from_pause_quanta_when_the_platform_has_none():
    platform = HeadroomPlatform(
        cell_bytes=144, pipeline_latency_bytes=18 * KB, mac_phy_delay_bytes=0.8 * KB
    )
    # IEEE 802.3 31B.3.7 per the HLD: 394 quanta at 100 Gb/s, 512 bits each.
    assert pause_quanta(100) == 394
    assert peer_response_bytes(100, platform) == 394 * 64
    assert peer_response_bytes(100, SPECTRUM_1) == pytest.approx(3.8 * KB)
    with pytest.raises(IntentInvalid) as caught:
        pause_quanta(30)
    assert "peer_response_bytes" in str(caught.value)


def test_gearbox_adds_its_bytes_both_ways():
    geared = HeadroomPlatform(
        cell_bytes=144,
        pipeline_latency_bytes=18 * KB,
        mac_phy_delay_bytes=0.8 * KB,
        gearbox_delay_ns=400,
    )
    plain = HeadroomPlatform(
        cell_bytes=144, pipeline_latency_bytes=18 * KB, mac_phy_delay_bytes=0.8 * KB
    )
    # 400 ns at 100 Gb/s = 5000 B, twice, x occupancy 2.25 = 22 500 B more before rounding.
    grown = headroom(100, 5, 9100, geared).xoff_bytes - headroom(100, 5, 9100, plain).xoff_bytes
    assert 22_500 - KB < grown <= 22_500 + KB


def test_shared_headroom_pool_reserves_xon_only():
    room = headroom(100, 40, 9216, SPECTRUM_1, shared_headroom_pool=True)
    assert room.size_bytes == room.xon_bytes == 19456
    assert room.xoff_bytes == 38912


@pytest.mark.parametrize(
    "bad",
    [
        {"cell_bytes": 0},
        {"small_packet_pct": 101},
        {"mac_phy_delay_bytes": -1.0},
        {"peer_response_bytes": float("nan")},
    ],
)
def test_platform_refuses_nonsense(bad):
    values = {"cell_bytes": 96, "pipeline_latency_bytes": 18 * KB, "mac_phy_delay_bytes": 800.0}
    with pytest.raises(IntentInvalid):
        HeadroomPlatform(**(values | bad))


def test_dcqcn_paper_defaults_and_refusals():
    assert (DCQCN_PAPER.kmin_bytes, DCQCN_PAPER.kmax_bytes, DCQCN_PAPER.pmax_pct) == (
        5_000,
        200_000,
        1,
    )
    with pytest.raises(IntentInvalid, match="Kmin"):
        DcqcnEcn(kmin_bytes=200_000, kmax_bytes=200_000, pmax_pct=1)
    with pytest.raises(IntentInvalid, match="pmax_pct"):
        DcqcnEcn(kmin_bytes=5_000, kmax_bytes=200_000, pmax_pct=101)


def test_xoff_point_is_the_congested_share_of_the_pool():
    # dynamic_th 0 (alpha 1), two lossless groups congested: 1 / (1 + 2) of the pool.
    assert xoff_point_bytes(900_000, 0, 2) == 300_000
    # alpha 2, one group: 2/3 of the pool, rounded down.
    assert xoff_point_bytes(1_000_000, 1, 1) == 666_666


ROOM_100G_40M = headroom(100, 40, 9216, SPECTRUM_1)  # size 58 368 B


def test_a_port_that_fits():
    queues = [LosslessQueue(3, DCQCN_PAPER), LosslessQueue(4, DCQCN_PAPER)]
    plan = port_lossless("Ethernet0", 2_000_000, queues, ROOM_100G_40M)
    assert plan.headroom_total_bytes == 2 * 58_368
    assert plan.shared_pool_bytes == 2_000_000 - 2 * 58_368
    assert plan.xoff_point_bytes == (2_000_000 - 2 * 58_368) // 3


def test_headroom_that_leaves_no_pool_is_refused_naming_port_priority_and_numbers():
    queues = [LosslessQueue(3, DCQCN_PAPER), LosslessQueue(4, DCQCN_PAPER)]
    with pytest.raises(HeadroomDoesNotFit) as caught:
        port_lossless("Ethernet8", 100_000, queues, ROOM_100G_40M, path="switches[0].ports[2]")
    error = caught.value
    assert (error.port, error.priority, error.headroom_bytes, error.buffer_bytes) == (
        "Ethernet8",
        4,
        2 * 58_368,
        100_000,
    )
    assert error.problems[0].path == "switches[0].ports[2]"
    assert "HeadroomDoesNotFit: Ethernet8" in error.problems[0].reason


def test_kmax_at_or_above_the_xoff_point_is_refused():
    queues = [LosslessQueue(3, DCQCN_PAPER)]
    # 500 000 B buffer - 58 368 B headroom = 441 632 B pool; alpha 1, one group: 220 816 B.
    assert port_lossless("Ethernet0", 500_000, queues, ROOM_100G_40M).xoff_point_bytes == 220_816
    # Two groups: 500 000 - 116 736 = 383 264 B, a third is 127 754 B < Kmax 200 000 B.
    two = [LosslessQueue(3, DCQCN_PAPER), LosslessQueue(4, DCQCN_PAPER)]
    with pytest.raises(KmaxAboveXoff) as caught:
        port_lossless("Ethernet0", 500_000, two, ROOM_100G_40M)
    error = caught.value
    assert (error.priority, error.kmax_bytes, error.xoff_point_bytes) == (3, 200_000, 127_754)
