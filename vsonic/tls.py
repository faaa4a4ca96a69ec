"""A self-signed certificate for vsonic's gNMI servers on 127.0.0.1, made with ``cryptography``.

It names the server both ways a client may check it: the IP address 127.0.0.1 (a client
dialling the address) and the DNS name ``vsonic.test`` (a client overriding the name it
expects), and any further DNS names ``vsonic up --advertise`` gives (the compose lab's
``vswitch``, which the controller's containers dial). It is its own CA, so a client can pass
it as the root to trust. ``vsonic up`` makes one per state directory (``state_tls``) and
serves every switch with it; the controller trusts it through ``SLUICE_GNMI_TLS_CA``.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Sequence
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from vsonic.gnmi_server import TlsFiles

SERVER_NAME = "vsonic.test"


def self_signed_tls(directory: Path, dns_names: Sequence[str] = ()) -> TlsFiles:
    """A fresh key and a certificate valid from five minutes ago for a day, written as PEM
    into ``directory``; it names ``dns_names`` besides vsonic.test and 127.0.0.1."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SERVER_NAME)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    *(x509.DNSName(name) for name in _names(dns_names)),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    files = TlsFiles(cert=directory / "server.crt", key=directory / "server.key")
    files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    # Created 0600 from the start: the key is never readable by others, not even briefly.
    fd = os.open(files.key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
    return files


def tls_files(state_dir: Path) -> TlsFiles:
    """Where ``vsonic up`` keeps the switches' certificate and key in ``state_dir``."""
    directory = state_dir / "tls"
    return TlsFiles(cert=directory / "server.crt", key=directory / "server.key")


def state_tls(state_dir: Path, dns_names: Sequence[str] = ()) -> TlsFiles:
    """The certificate of ``state_dir``'s switches, made on first use and kept after, unless
    it lacks one of ``dns_names`` (the switches are now advertised by another name)."""
    files = tls_files(state_dir)
    kept = files.cert.is_file() and files.key.is_file()
    if kept and set(dns_names) <= certificate_dns_names(files.cert):
        return files
    files.cert.parent.mkdir(parents=True, exist_ok=True)
    return self_signed_tls(files.cert.parent, dns_names)


def certificate_dns_names(cert: Path) -> set[str]:
    """The DNS names in a PEM certificate's subject alternative names."""
    loaded = x509.load_pem_x509_certificate(cert.read_bytes())
    names = loaded.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return set(names.get_values_for_type(x509.DNSName))


def _names(dns_names: Sequence[str]) -> list[str]:
    """vsonic.test first, then each further name once."""
    return list(dict.fromkeys([SERVER_NAME, *dns_names]))
