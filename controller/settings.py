"""Settings, built once by the entry point and injected; never imported as a global."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Process settings from ``SLUICE_*`` environment variables (``DATABASE_URL`` too)."""

    model_config = SettingsConfigDict(
        env_prefix="SLUICE_", extra="ignore", frozen=True, populate_by_name=True
    )

    database_url: SecretStr | None = Field(
        default=None,
        validation_alias="DATABASE_URL",
        description="SQLAlchemy URL (postgresql+psycopg://...); the demo starts its own if unset",
    )
    api_host: str = "127.0.0.1"
    api_port: int = 8000
    api_url: str = "http://127.0.0.1:8000"
    api_token: SecretStr | None = None
    page_size_max: int = 500
    # Switch sessions (gNMI Get, Set, Subscribe) use TLS unless gnmi_insecure says otherwise.
    gnmi_tls_ca: Path | None = Field(
        default=None,
        description="CA bundle that signed the switches' certificates (PEM); "
        "unset: the system's trusted roots",
    )
    gnmi_tls_cert: Path | None = Field(
        default=None, description="client certificate for mutual TLS (PEM), with gnmi_tls_key"
    )
    gnmi_tls_key: Path | None = Field(default=None, description="client key for mutual TLS")
    gnmi_tls_server_name: str | None = Field(
        default=None, description="name to check in the switch certificate, if not its address"
    )
    gnmi_insecure: bool = Field(
        default=False, description="lab only: plaintext gNMI to every switch (no TLS at all)"
    )
