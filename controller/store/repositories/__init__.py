"""Repositories: the only place SQL is written. Keyword-only functions over a ``Session``.

They never commit; the service that opened the transaction decides.
"""
