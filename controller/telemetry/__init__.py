"""Telemetry: counters and agent state streamed from switches (gNMI Subscribe), turned into
rates and exported as Prometheus metrics by the collector process (docs/telemetry.md)."""
