"""Staged rollouts of switches and of hosts: the staging written once (``staging.py``: canary,
batches, failure budget, what runs next), driven by the switch runner (``switches.py``) and
the host runner (``hosts.py``), whose state lives in PostgreSQL so the worker resumes them."""
