"""The collector's settings (``SLUICE_TELEMETRY_*``, ``SLUICE_GNMI_*``), on top of the
process ``Settings``; a nested section the lead may fold into ``controller/settings.py``."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from controller.settings import Settings
from controller.southbound.gnmi import DEFAULT_USERNAME, TlsOptions


class TelemetrySettings(Settings):
    telemetry_metrics_host: str = "127.0.0.1"
    telemetry_metrics_port: int = Field(default=9464, ge=0, le=65535)
    telemetry_refresh_s: float = Field(
        default=30.0, gt=0, le=3600, description="how often the switch list is re-read"
    )
    telemetry_rate_window_s: float = Field(
        default=0.0, ge=0, le=600, description="rates span at least this much switch time"
    )
    telemetry_counter_mode: str = Field(default="ON_CHANGE", pattern="^(ON_CHANGE|SAMPLE)$")
    telemetry_sample_interval_s: float = Field(default=1.0, ge=1.0, le=3600)
    gnmi_username: str = DEFAULT_USERNAME
    gnmi_tls_root_cert: Path | None = None
    gnmi_tls_client_cert: Path | None = None
    gnmi_tls_client_key: Path | None = None
    gnmi_tls_server_name: str | None = None

    def tls(self) -> TlsOptions | None:
        if self.gnmi_tls_root_cert is None:
            return None
        return TlsOptions(
            root_cert=self.gnmi_tls_root_cert,
            client_cert=self.gnmi_tls_client_cert,
            client_key=self.gnmi_tls_client_key,
            server_name=self.gnmi_tls_server_name,
        )
