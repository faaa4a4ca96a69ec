"""Telemetry: one switch's counters and agent state as the collector holds them (the ingest
from its streams, the rates over the compiled core) and their Prometheus exposition; the
health model and the tuner's summary read back from Prometheus (docs/telemetry.md,
docs/health.md)."""
