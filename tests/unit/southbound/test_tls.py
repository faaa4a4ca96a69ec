"""Which TLS a switch session gets from the settings: TLS unless insecure is said outright."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.settings import Settings
from controller.southbound.gnmi import TlsOptions, session_tls


def test_no_settings_at_all_is_tls_with_the_system_roots() -> None:
    assert session_tls(insecure=False) == TlsOptions()


def test_plaintext_only_when_insecure_is_said() -> None:
    assert session_tls(insecure=True) is None


def test_insecure_with_certificates_is_a_contradiction() -> None:
    with pytest.raises(ValueError, match="insecure"):
        session_tls(insecure=True, ca=Path("/etc/sluice/ca.pem"))


def test_mutual_tls_needs_both_certificate_and_key() -> None:
    with pytest.raises(ValueError, match="both"):
        session_tls(insecure=False, cert=Path("/etc/sluice/client.pem"))
    both = session_tls(
        insecure=False, cert=Path("/etc/sluice/client.pem"), key=Path("/etc/sluice/client.key")
    )
    assert both == TlsOptions(
        client_cert=Path("/etc/sluice/client.pem"), client_key=Path("/etc/sluice/client.key")
    )


def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLUICE_GNMI_TLS_CA", "/etc/sluice/ca.pem")
    monkeypatch.setenv("SLUICE_GNMI_TLS_SERVER_NAME", "leaf1.fabric")
    assert Settings().gnmi.tls() == TlsOptions(
        root_cert=Path("/etc/sluice/ca.pem"), server_name="leaf1.fabric"
    )
    monkeypatch.delenv("SLUICE_GNMI_TLS_CA")
    monkeypatch.delenv("SLUICE_GNMI_TLS_SERVER_NAME")
    monkeypatch.setenv("SLUICE_GNMI_INSECURE", "true")
    assert Settings().gnmi.tls() is None
