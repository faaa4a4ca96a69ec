"""Telemetry: counters and agent state streamed from switches (gNMI Subscribe) and turned
into rates by the collector, exported to Prometheus; the health model and the PromQL client
that read the history back (docs/telemetry.md, docs/health.md)."""
