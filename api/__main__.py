"""``python -m api``: serve the REST API on the configured host and port (127.0.0.1:8000),
over HTTPS when ``SLUICE_API_TLS_CERT`` and ``SLUICE_API_TLS_KEY`` name a certificate."""

from __future__ import annotations

import uvicorn

from api.main import create_app
from controller.settings import Settings


def main() -> None:
    settings = Settings()
    uvicorn.run(
        create_app(settings),
        host=settings.api.host,
        port=settings.api.port,
        # Both or neither (ApiSettings); neither: plain HTTP, for loopback or behind a proxy.
        ssl_certfile=settings.api.tls_cert,
        ssl_keyfile=settings.api.tls_key,
    )


if __name__ == "__main__":
    main()
