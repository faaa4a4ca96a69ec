"""The southbound: the one gNMI adapter (``gnmi.py``), its paths and values (``paths.py``),
retries (``retry.py``) and credential resolution (``credentials.py``)."""
