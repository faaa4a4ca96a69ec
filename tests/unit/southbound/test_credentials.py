"""Credential references resolve to secrets that never show in a repr or an error."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from controller.errors import NotFound
from controller.intent.models import GnmiEndpoint, Port, Role, Switch
from controller.southbound.credentials import resolve_secret
from controller.southbound.gnmi import GnmiTarget, TlsOptions, target_for_switch

SECRET = "s3cr3t-Value!"


def test_env_reference_reads_the_variable() -> None:
    secret = resolve_secret("env:GNMI_PW", environ={"GNMI_PW": SECRET})
    assert secret.get_secret_value() == SECRET


def test_file_reference_reads_the_file_without_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "gnmi.pw"
    path.write_text(SECRET + "\n", encoding="utf-8")
    assert resolve_secret(f"file:{path}", environ={}).get_secret_value() == SECRET


@pytest.mark.parametrize(
    ("ref", "named"),
    [
        ("env:MISSING", "MISSING"),
        ("file:/nonexistent/sluice/pw", "/nonexistent/sluice/pw"),
        ("vault:kv/gnmi", "vault"),
        ("plain", "plain"),
    ],
)
def test_unresolvable_reference_names_the_reference(ref: str, named: str) -> None:
    with pytest.raises(NotFound, match=named):
        resolve_secret(ref, environ={"OTHER": SECRET})


def test_error_for_a_file_never_carries_its_content(tmp_path: Path) -> None:
    # A directory cannot be read as text: the error must name the reference only.
    with pytest.raises(NotFound) as raised:
        resolve_secret(f"file:{tmp_path}", environ={"X": SECRET})
    assert SECRET not in str(raised.value)


def test_target_repr_hides_the_password() -> None:
    target = GnmiTarget(
        "leaf1", "127.0.0.1", 50051, "admin", SecretStr(SECRET), TlsOptions(server_name="leaf1")
    )
    assert SECRET not in repr(target)
    assert SECRET not in str(target)
    assert "leaf1" in repr(target)


def test_target_for_switch_resolves_the_reference_of_the_intent() -> None:
    switch = Switch(
        name="leaf1",
        role=Role.LEAF,
        gnmi=GnmiEndpoint(address="127.0.0.1", port=50051),
        credential_ref="env:SLUICE_GNMI_PASSWORD",
        ports=(Port(name="Ethernet0", speed_gbps=25),),
    )
    seen: list[str] = []

    def resolver(ref: str) -> SecretStr:
        seen.append(ref)
        return SecretStr(SECRET)

    target = target_for_switch(switch, resolver, username="ops")
    assert seen == ["env:SLUICE_GNMI_PASSWORD"]
    assert (target.name, target.endpoint, target.username) == ("leaf1", "127.0.0.1:50051", "ops")
    assert target.password.get_secret_value() == SECRET
    assert SECRET not in repr(target)


def test_ipv6_endpoint_is_bracketed() -> None:
    target = GnmiTarget("s", "::1", 8080, "admin", SecretStr("x"))
    assert target.endpoint == "[::1]:8080"
