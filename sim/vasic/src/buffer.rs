//! Shared-buffer admission: per-queue dynamic (alpha) or static limits
//! (sonic-buffer-profile.yang; SAI saibuffer.h; sonic-swss orchagent/bufferorch.cpp).
//!
//! Dynamic: Choudhury and Hahne's rule, as SAI's `SHARED_DYNAMIC_TH` states it: a queue may
//! grow while its length is below `alpha x (B - Q)`, `B` the pool, `Q` what the pool holds,
//! `alpha = 2^dynamic_th`. One congested queue settles where `q = alpha (B - q)`, i.e. at
//! `alpha / (1 + alpha)` of the pool. Static: `q + len <= static_th`, 0 meaning no limit.
//! Either way the pool itself must have room, except for a queue on a pool of its own
//! (`OwnPool`: SONiC's stock lossless queues, `egress_lossless_profile` on the egress
//! lossless pool, sonic-buildimage files/build_templates/buffers_config.j2), which the shared
//! pool neither limits nor holds.

/// A queue's BUFFER_PROFILE threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferLimit {
    /// `dynamic_th`, -8..7: alpha = 2^dynamic_th.
    Dynamic(i8),
    /// `static_th`, bytes; 0 is no limit.
    Static(u64),
    /// `static_th` on a pool of the queue's own (0: no limit): the shared pool neither
    /// limits the queue nor counts its bytes.
    OwnPool(u64),
}

impl BufferLimit {
    /// alpha for a dynamic limit (`None` for a static one).
    pub fn alpha(self) -> Option<f64> {
        match self {
            Self::Dynamic(th) => Some(2f64.powi(i32::from(th))),
            Self::Static(_) | Self::OwnPool(_) => None,
        }
    }

    /// Whether the queue's bytes are held in the shared pool (all but `OwnPool`).
    pub fn in_shared_pool(self) -> bool {
        !matches!(self, Self::OwnPool(_))
    }

    /// Whether a packet of `len` bytes may join a queue holding `queue_bytes` when the pool
    /// of `pool_bytes` holds `pool_used` bytes.
    pub fn admits(self, queue_bytes: u64, len: u64, pool_bytes: u64, pool_used: u64) -> bool {
        if let Self::OwnPool(limit) = self {
            return limit == 0 || queue_bytes + len <= limit;
        }
        if pool_used + len > pool_bytes {
            return false;
        }
        match self {
            Self::Dynamic(th) => {
                let alpha = 2f64.powi(i32::from(th));
                (queue_bytes as f64) < alpha * (pool_bytes - pool_used) as f64
            }
            Self::Static(0) => true,
            Self::Static(limit) | Self::OwnPool(limit) => queue_bytes + len <= limit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynamic_limit_compares_queue_with_alpha_times_free() {
        // alpha 2^1 = 2. Pool 100k, used 40k: free 60k, threshold 120k.
        let d = BufferLimit::Dynamic(1);
        assert_eq!(d.alpha(), Some(2.0));
        assert!(d.admits(40_000, 1_500, 100_000, 40_000));
        // alpha 2^-2 = 0.25: threshold 15k; a queue holding 15k may not grow.
        let d = BufferLimit::Dynamic(-2);
        assert!(d.admits(14_999, 1_500, 100_000, 40_000));
        assert!(!d.admits(15_000, 1_500, 100_000, 40_000));
        // Pool without room refuses whatever the threshold.
        assert!(!BufferLimit::Dynamic(7).admits(0, 1_500, 100_000, 99_000));
    }

    #[test]
    fn static_limit_counts_the_arriving_packet() {
        assert!(BufferLimit::Static(3_000).admits(1_500, 1_500, 100_000, 0));
        assert!(!BufferLimit::Static(3_000).admits(1_501, 1_500, 100_000, 0));
        assert!(BufferLimit::Static(0).admits(90_000, 1_500, 100_000, 90_000));
    }

    #[test]
    fn a_queue_on_its_own_pool_ignores_the_shared_one() {
        // The shared pool is full: a Static queue is refused, an OwnPool one only by its limit.
        assert!(!BufferLimit::Static(0).admits(0, 1_500, 100_000, 99_000));
        assert!(BufferLimit::OwnPool(0).admits(0, 1_500, 100_000, 99_000));
        assert!(BufferLimit::OwnPool(3_000).admits(1_500, 1_500, 100_000, 100_000));
        assert!(!BufferLimit::OwnPool(3_000).admits(1_501, 1_500, 100_000, 0));
        assert!(!BufferLimit::OwnPool(1).in_shared_pool());
        assert!(BufferLimit::Static(1).in_shared_pool());
    }
}
