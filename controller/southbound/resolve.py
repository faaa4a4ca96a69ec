"""The system's answer to which addresses a DNS name stands for, as a gRPC channel dialling
it would find them: the resolver the API and ``sluice check`` inject into the intent's
endpoint rule (``controller.intent.validate.unique_endpoints``), so two switches named
differently but reached at one address are refused.

Lookups run at once in threads and the whole set waits at most ``budget_s``: a name that is
unknown, or not answered in time, is compared by its spelling alone (the rule never fails
because DNS is slow or the switch is not yet in it).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait

LOOKUP_BUDGET_S = 2.0
LOOKUP_THREADS = 16


def _addresses_of(name: str) -> frozenset[str]:
    try:
        answers = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return frozenset()
    return frozenset(str(info[4][0]) for info in answers)


def resolve_names(
    names: Sequence[str],
    *,
    budget_s: float = LOOKUP_BUDGET_S,
    lookup: Callable[[str], frozenset[str]] = _addresses_of,
) -> dict[str, frozenset[str]]:
    """The addresses of each of ``names`` that answered within ``budget_s`` (all at once)."""
    wanted = sorted(set(names))
    if not wanted:
        return {}
    pool = ThreadPoolExecutor(max_workers=min(LOOKUP_THREADS, len(wanted)))
    futures = {pool.submit(lookup, name): name for name in wanted}
    done, _ = wait(futures, timeout=budget_s)
    # Late lookups finish in their threads; nothing waits for them.
    pool.shutdown(wait=False, cancel_futures=True)
    return {futures[future]: future.result() for future in done}
