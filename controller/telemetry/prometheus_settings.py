"""Where the controller reads telemetry history: the Prometheus server's URL and deadline.

A small model of its own so the process settings (``controller/settings.py``) can fold it in
as a section; read from ``SLUICE_PROMETHEUS_*`` environment variables meanwhile.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class PrometheusSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SLUICE_PROMETHEUS_", extra="ignore", frozen=True)

    url: str = Field(
        default="http://127.0.0.1:9090",
        pattern=r"^https?://",
        description="base URL of the Prometheus that scrapes the collectors",
    )
    timeout_s: float = Field(default=5.0, gt=0.0, le=120.0, description="seconds per query")
