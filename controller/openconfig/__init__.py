"""The OpenConfig dialect: the intent's compiled per-switch model as ``openconfig-qos``."""
