"""The tuner: pure rules from telemetry summaries and the intent to proposed changes."""
