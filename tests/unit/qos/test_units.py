"""Unit conversions."""

from __future__ import annotations

import pytest

from controller.errors import IntentInvalid
from controller.qos.units import gbps_to_bytes_per_s, transmission_time_s, us_to_s


def test_gbps_to_bytes_per_s():
    # 10 x 1e9 / 8 = 1.25e9; 25 Gb/s -> 3.125e9; 1 Gb/s -> 125e6.
    assert gbps_to_bytes_per_s(10) == 1.25e9
    assert gbps_to_bytes_per_s(25) == 3.125e9
    assert gbps_to_bytes_per_s(1) == 125e6


def test_gbps_rejects_zero():
    with pytest.raises(IntentInvalid):
        gbps_to_bytes_per_s(0)


def test_transmission_time():
    # QJUMP Fig. 11: 256 B x 8 / 10e9 = 0.2048 us.
    assert transmission_time_s(256, 10e9) == pytest.approx(0.2048e-6)


def test_us_to_s():
    assert us_to_s(85.2) == pytest.approx(85.2e-6)
