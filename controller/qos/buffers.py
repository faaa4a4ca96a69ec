"""Shared-buffer alpha for SONiC ``BUFFER_PROFILE.dynamic_th``.

SAI's ``SHARED_DYNAMIC_TH`` n makes a queue's shared-buffer limit 2^n times the pool's free
buffer, so alpha = 2^dynamic_th, and SONiC's YANG allows dynamic_th in -8..7
(sonic-buffer-profile.yang and SAI saibuffer.h). That is Choudhury and Hahne's Dynamic
Threshold rule: a queue may grow while its length is below alpha x (B - Q(t)), with B the
shared pool and Q(t) the pool's total occupancy.

Steady state with N equally congested queues: each holds q = alpha x (B - N q), so
q = alpha B / (1 + N alpha) and each gets alpha / (1 + N alpha) of the pool; the pool keeps
B / (1 + N alpha) free, which is the headroom left for a burst on a new queue.
"""

from __future__ import annotations

import math

from controller.qos.checks import invalid, require_int_at_least, require_positive
from controller.qos.ecn import ThresholdBounds

DYNAMIC_TH_MIN = -8  # SONiC YANG range of BUFFER_PROFILE.dynamic_th
DYNAMIC_TH_MAX = 7
# The NVIDIA/Mellanox SAI maps -8 to alpha 0 and 7 to "infinite" instead of 2^n
# (its SAI implementation), so selection stays inside -7..6 by default, where
# every implementation read here agrees that alpha = 2^n.
PORTABLE_TH_MIN = -7
PORTABLE_TH_MAX = 6


def alpha_of(dynamic_th: int) -> float:
    """alpha = 2^dynamic_th: 0 -> 1, 3 -> 8, -3 -> 1/8."""
    if isinstance(dynamic_th, bool) or not isinstance(dynamic_th, int):
        raise invalid("dynamic_th", f"must be an integer, got {dynamic_th!r}")
    if not DYNAMIC_TH_MIN <= dynamic_th <= DYNAMIC_TH_MAX:
        raise invalid(
            "dynamic_th", f"must be in {DYNAMIC_TH_MIN}..{DYNAMIC_TH_MAX}, got {dynamic_th}"
        )
    return math.ldexp(1.0, dynamic_th)


def steady_share(alpha: float, n_congested: int) -> float:
    """Fraction of the shared pool each of N equally congested queues holds: alpha/(1+N alpha).

    One congested queue: 1/2 at alpha 1 (dynamic_th 0), 8/9 at alpha 8, 1/9 at alpha 1/8.
    """
    require_positive("alpha", alpha)
    require_int_at_least("n_congested", n_congested, 1)
    return alpha / (1.0 + n_congested * alpha)


def select_dynamic_th(
    n_queues: int,
    max_single_queue_share: float,
    *,
    lowest: int = PORTABLE_TH_MIN,
    highest: int = PORTABLE_TH_MAX,
) -> int:
    """The largest dynamic_th whose per-queue share, with ``n_queues`` congested, is <= target.

    ``n_queues`` is how many queues are assumed congested together (1 = a lone congested
    queue, the case that decides how much of the pool one class can take). Largest, because
    a bigger alpha lets a queue absorb more of a burst; the cap keeps the rest of the pool for
    the other queues. The search runs over ``lowest..highest`` (default -7..6, see above).
    Refused if even ``lowest`` gives a share above the target.
    """
    require_int_at_least("n_queues", n_queues, 1)
    if not math.isfinite(max_single_queue_share) or not 0 < max_single_queue_share <= 1:
        raise invalid(
            "max_single_queue_share", f"must be in (0, 1], got {max_single_queue_share!r}"
        )
    if not DYNAMIC_TH_MIN <= lowest <= highest <= DYNAMIC_TH_MAX:
        raise invalid("lowest", f"need {DYNAMIC_TH_MIN} <= lowest <= highest <= {DYNAMIC_TH_MAX}")
    # The share grows with alpha, so scan down from the top; 1e-12 absorbs float noise in
    # exact cases such as alpha 1, N 4 -> 1/5 against a target of 0.2.
    for dynamic_th in range(highest, lowest - 1, -1):
        share = steady_share(alpha_of(dynamic_th), n_queues)
        if share <= max_single_queue_share + 1e-12:
            return dynamic_th
    smallest = steady_share(alpha_of(lowest), n_queues)
    raise invalid(
        "max_single_queue_share",
        f"{max_single_queue_share} is below {smallest:.6f}, the share at dynamic_th {lowest}",
    )


def dynaq_bounds(
    buffer_bytes: int, weight: int, total_weight: int, mtu_bytes: int
) -> ThresholdBounds:
    """Where the agent may move a DynaQ queue's drop threshold, and its fallback, from the
    port's egress buffer (DynaQ slides, Kim and Lee, "Key Idea of DynaQ"), not from K.

    * ceiling = the port buffer: DynaQ's work conservation lets one queue take all free
      buffer, and its flows may need far more than K = C x RTT x lambda when their own RTT
      is deeper than the fabric's base RTT (K caps a queue at the fabric's BDP).
    * floor = static fallback = the queue's weighted share of the buffer, w_i / sum(w) x B,
      at least one MTU: DynaQ never limits an active queue below its satisfaction threshold
      S_i = w_i / sum(active w) x B, which is at least this; as a fallback it is the static
      per-queue split (the slides' PQL), which keeps weighted sharing without the agent at
      the price of work conservation.
    * STRICT (weight 0): outside DynaQ's weighted sharing and served first, it may use the
      whole buffer; floor one MTU.

    Rounded down (integer floor), so the static shares never sum above the buffer.
    Example: B = 192 000 B, weights 4:3:2:1 -> queue 0 has 76 800 B .. 192 000 B.
    """
    require_int_at_least("buffer_bytes", buffer_bytes, 1)
    require_int_at_least("weight", weight, 0)
    require_int_at_least("total_weight", total_weight, 1)
    require_int_at_least("mtu_bytes", mtu_bytes, 1)
    if weight > total_weight:
        raise invalid("weight", f"{weight} exceeds the port's total weight {total_weight}")
    ceiling = max(buffer_bytes, mtu_bytes)
    if weight == 0:
        return ThresholdBounds(floor_bytes=mtu_bytes, ceiling_bytes=ceiling, static_bytes=ceiling)
    share = max(buffer_bytes * weight // total_weight, mtu_bytes)
    return ThresholdBounds(floor_bytes=share, ceiling_bytes=ceiling, static_bytes=share)
