"""Services: the controller's use cases over the store, with no HTTP types.

Each public method is one database transaction; errors are the typed ones in
``controller/errors.py``. The API (``api/``) and ``sluice-admin`` are thin edges over these.
"""
