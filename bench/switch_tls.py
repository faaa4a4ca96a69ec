"""The TLS between a bench and its virtual switches: every bench switch serves gNMI over TLS,
as a SONiC switch does (sonic-gnmi's ``--server_crt``/``--server_key``), and every bench
client trusts that certificate and nothing else. Plaintext would leave the handshake and the
record encryption out of the figures; a deployment never runs without them.

One certificate per bench run: ``bench_tls`` makes it with vsonic's own maker
(``vsonic.tls.self_signed_tls``: its own CA, naming 127.0.0.1) in a temporary directory
removed after the run. The helpers below turn it into what each kind of client and server
takes.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc  # type: ignore[import-untyped]

from controller.southbound.gnmi import TlsOptions
from vsonic.gnmi_server import TlsFiles
from vsonic.tls import self_signed_tls


@contextmanager
def bench_tls() -> Iterator[TlsFiles]:
    """A fresh self-signed switch certificate and key, deleted when the run ends."""
    with tempfile.TemporaryDirectory(prefix="sluice-bench-tls-") as directory:
        yield self_signed_tls(Path(directory))


def client_tls(files: TlsFiles) -> TlsOptions:
    """The southbound's TLS options: trust exactly the bench switches' certificate."""
    return TlsOptions(root_cert=files.cert)


def channel_credentials(ca: Path) -> grpc.ChannelCredentials:
    """gRPC credentials for a raw channel (a bench peer that is not the southbound) trusting
    the certificate at ``ca`` (the bench switches' own: they are their own CA)."""
    return grpc.ssl_channel_credentials(root_certificates=ca.read_bytes())


def serve_flags(files: TlsFiles) -> list[str]:
    """The ``python -m vsonic.serve`` flags that make it serve TLS with ``files``."""
    return ["--tls-cert", str(files.cert), "--tls-key", str(files.key)]


def as_json(files: TlsFiles) -> dict[str, str]:
    """``files`` as a JSON object (bench/vsonic_host.py's spec); paths only, never key bytes."""
    return {"cert": str(files.cert), "key": str(files.key)}


def from_json(raw: object) -> TlsFiles:
    """The inverse of ``as_json``; a spec without both paths is refused."""
    if not isinstance(raw, dict) or not {"cert", "key"} <= raw.keys():
        raise ValueError('the spec needs "tls": {"cert": path, "key": path}')
    return TlsFiles(cert=Path(str(raw["cert"])), key=Path(str(raw["key"])))
