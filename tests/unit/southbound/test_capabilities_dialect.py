"""A switch's dialect from the models its gNMI Capabilities list (``Capabilities.dialect``)."""

from __future__ import annotations

from controller.intent.models import Dialect
from controller.southbound.gnmi import Capabilities

# What sonic-gnmi lists (docs/vsonic.md, "capabilities"): its translib client's OpenConfig
# models beside its sonic-db origin.
SONIC_GNMI = (
    "openconfig-acl",
    "openconfig-lldp",
    "openconfig-platform",
    "openconfig-system",
    "ietf-yang-library",
    "sonic-db",
)


def caps(*models: str) -> Capabilities:
    return Capabilities(("JSON_IETF",), models, "0.7.0")


def test_sonic_db_means_sonic_whatever_openconfig_models_sit_beside_it() -> None:
    assert caps(*SONIC_GNMI).dialect is Dialect.SONIC
    assert caps(*SONIC_GNMI, "openconfig-qos").dialect is Dialect.SONIC


def test_openconfig_qos_without_sonic_db_means_openconfig() -> None:
    assert caps("openconfig-interfaces", "openconfig-qos").dialect is Dialect.OPENCONFIG
    assert caps("openconfig-qos-elements").dialect is Dialect.OPENCONFIG  # a submodule listed


def test_neither_is_no_dialect() -> None:
    assert caps("openconfig-interfaces", "openconfig-qosx").dialect is None
    assert caps().dialect is None
