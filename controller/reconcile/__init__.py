"""Keeping switches converged: apply-and-verify (``apply.py``), rollouts and the loop."""
