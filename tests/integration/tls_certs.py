"""The switch certificate the integration tests serve TLS with (made by ``vsonic.tls``)."""

from __future__ import annotations

from vsonic.tls import SERVER_NAME, self_signed_tls

__all__ = ["SERVER_NAME", "self_signed_tls"]
