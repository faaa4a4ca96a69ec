"""Telemetry: the collector, rates, the health model and the PromQL client (docs/telemetry.md)."""
