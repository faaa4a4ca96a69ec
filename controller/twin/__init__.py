"""The packet-level twin: an intent's compiled configuration run in ``sim/netsim``.

``translate`` turns an intent (what sluice would push: queues, weights, thresholds, buffers,
DSCP map, PIAS thresholds) into netsim's JSON run description, listing what netsim cannot
model; ``results`` names netsim's per-class figures and compares two runs; ``runner`` runs
the netsim binary (the I/O edge).
"""
