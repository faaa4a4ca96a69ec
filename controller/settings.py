"""Settings, built once by the entry point and injected; never imported as a global."""

from __future__ import annotations

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
