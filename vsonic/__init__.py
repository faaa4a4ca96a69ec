"""The virtual SONiC switch: Redis DBs in SONiC layout and a sonic-db gNMI server.

See docs/vsonic.md. Deliberately independent of ``controller``.
"""
