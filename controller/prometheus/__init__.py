"""How the controller reads Prometheus: the PromQL client and the gates' reads through it."""
