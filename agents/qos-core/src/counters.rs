//! Queue counter snapshots under their SAI names, and rate estimation between two of them.
//!
//! A snapshot is what one poll of `COUNTERS:oid:<queue>` returns, stamped with the time the
//! caller read it. Rates come from the difference of two snapshots. Real counter feeds
//! misbehave, so every way a pair can be unusable is a typed outcome, never a panic:
//! - a counter that goes backwards by an implausible amount was reset (a restarted
//!   syncd, a cleared counter): the new snapshot becomes the baseline and no rate is given;
//! - a counter that goes backwards by a plausible amount wrapped at `u64::MAX`;
//! - a sample no newer than the baseline (`dt <= 0`) arrived late and is ignored;
//! - counters that have not changed for longer than the stale limit are `Stale`.

use std::collections::HashMap;

/// `SAI_QUEUE_STAT_PACKETS`: packets transmitted by the queue.
pub const SAI_QUEUE_STAT_PACKETS: &str = "SAI_QUEUE_STAT_PACKETS";
/// `SAI_QUEUE_STAT_BYTES`: bytes transmitted by the queue.
pub const SAI_QUEUE_STAT_BYTES: &str = "SAI_QUEUE_STAT_BYTES";
/// `SAI_QUEUE_STAT_DROPPED_PACKETS`: packets dropped (tail drop and WRED).
pub const SAI_QUEUE_STAT_DROPPED_PACKETS: &str = "SAI_QUEUE_STAT_DROPPED_PACKETS";
/// `SAI_QUEUE_STAT_DROPPED_BYTES`: bytes dropped (tail drop and WRED).
pub const SAI_QUEUE_STAT_DROPPED_BYTES: &str = "SAI_QUEUE_STAT_DROPPED_BYTES";
/// `SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES`: bytes in the queue right now (a gauge).
pub const SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES: &str = "SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES";
/// `SAI_QUEUE_STAT_WATERMARK_BYTES`: the highest occupancy since the last clear (a gauge).
pub const SAI_QUEUE_STAT_WATERMARK_BYTES: &str = "SAI_QUEUE_STAT_WATERMARK_BYTES";
/// `SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES`: the highest shared-buffer occupancy since the
/// last poll. The one queue watermark SONiC polls (group QUEUE_WATERMARK, read and cleared at
/// every poll: sonic-swss `orchagent/watermarkorch.cpp`, `watermark_queue.lua`).
pub const SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES: &str = "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES";
/// `SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS`: packets WRED marked CE instead of dropping.
pub const SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS: &str = "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS";
/// `SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES`: bytes of those packets.
pub const SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES: &str = "SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES";

/// The queue counters sluice reads, one field per SAI stat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueCounters {
    /// `SAI_QUEUE_STAT_PACKETS`
    pub packets: u64,
    /// `SAI_QUEUE_STAT_BYTES`
    pub bytes: u64,
    /// `SAI_QUEUE_STAT_DROPPED_PACKETS`
    pub dropped_packets: u64,
    /// `SAI_QUEUE_STAT_DROPPED_BYTES`
    pub dropped_bytes: u64,
    /// `SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES` (gauge)
    pub curr_occupancy_bytes: u64,
    /// `SAI_QUEUE_STAT_WATERMARK_BYTES` (gauge)
    pub watermark_bytes: u64,
    /// `SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS`
    pub wred_ecn_marked_packets: u64,
    /// `SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES`
    pub wred_ecn_marked_bytes: u64,
}

/// A COUNTERS_DB field that could not be read as a counter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("counter {field} is not a decimal u64: {value:?}")]
pub struct CounterParseError {
    /// The SAI stat name.
    pub field: &'static str,
    /// The value as found.
    pub value: String,
}

impl QueueCounters {
    /// Reads the counters from a COUNTERS_DB hash (field name -> decimal string). A stat the
    /// platform does not poll is absent and reads as 0, as `show queue counters` shows it.
    ///
    /// A SONiC switch does not poll the current occupancy (it is not in the QUEUE group); it
    /// polls the shared watermark, read and cleared at every poll, so the value in COUNTERS is
    /// the peak occupancy since the previous poll. When `SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES`
    /// is absent, that peak stands in for it: an upper bound on what the queue held in the
    /// interval, and exactly what DynaQ needs to tell a queue that holds buffer from one that
    /// does not. `SAI_QUEUE_STAT_WATERMARK_BYTES` (not polled by SONiC) falls back to the
    /// shared one the same way.
    pub fn from_fields(fields: &HashMap<String, String>) -> Result<Self, CounterParseError> {
        let read = |field: &'static str| -> Result<u64, CounterParseError> {
            match fields.get(field) {
                None => Ok(0),
                Some(value) => {
                    value.trim().parse::<u64>().map_err(|_| CounterParseError { field, value: value.clone() })
                }
            }
        };
        let shared_watermark = read(SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES)?;
        let or_watermark = |field: &'static str| -> Result<u64, CounterParseError> {
            if fields.contains_key(field) {
                read(field)
            } else {
                Ok(shared_watermark)
            }
        };
        Ok(Self {
            packets: read(SAI_QUEUE_STAT_PACKETS)?,
            bytes: read(SAI_QUEUE_STAT_BYTES)?,
            dropped_packets: read(SAI_QUEUE_STAT_DROPPED_PACKETS)?,
            dropped_bytes: read(SAI_QUEUE_STAT_DROPPED_BYTES)?,
            curr_occupancy_bytes: or_watermark(SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES)?,
            watermark_bytes: or_watermark(SAI_QUEUE_STAT_WATERMARK_BYTES)?,
            wred_ecn_marked_packets: read(SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS)?,
            wred_ecn_marked_bytes: read(SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES)?,
        })
    }

    /// The counters as COUNTERS_DB would hold them (decimal strings under SAI names).
    pub fn to_fields(&self) -> Vec<(&'static str, String)> {
        vec![
            (SAI_QUEUE_STAT_PACKETS, self.packets.to_string()),
            (SAI_QUEUE_STAT_BYTES, self.bytes.to_string()),
            (SAI_QUEUE_STAT_DROPPED_PACKETS, self.dropped_packets.to_string()),
            (SAI_QUEUE_STAT_DROPPED_BYTES, self.dropped_bytes.to_string()),
            (SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES, self.curr_occupancy_bytes.to_string()),
            (SAI_QUEUE_STAT_WATERMARK_BYTES, self.watermark_bytes.to_string()),
            (SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS, self.wred_ecn_marked_packets.to_string()),
            (SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES, self.wred_ecn_marked_bytes.to_string()),
        ]
    }

    /// The monotonic counters with their names (the gauges are left out: they are not
    /// differenced).
    fn monotonic(&self) -> [(&'static str, u64); 6] {
        [
            (SAI_QUEUE_STAT_PACKETS, self.packets),
            (SAI_QUEUE_STAT_BYTES, self.bytes),
            (SAI_QUEUE_STAT_DROPPED_PACKETS, self.dropped_packets),
            (SAI_QUEUE_STAT_DROPPED_BYTES, self.dropped_bytes),
            (SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS, self.wred_ecn_marked_packets),
            (SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES, self.wred_ecn_marked_bytes),
        ]
    }
}

/// Counters plus the time (caller's clock, nanoseconds) they were read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueSnapshot {
    /// When the counters were read, in nanoseconds on the caller's clock.
    pub at_ns: u64,
    /// The counters.
    pub counters: QueueCounters,
}

/// Per-second rates of one queue over one interval, plus the gauges at its end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueRates {
    /// Length of the interval in nanoseconds (always > 0).
    pub dt_ns: u64,
    /// Transmitted bits per second.
    pub tx_bps: f64,
    /// Transmitted packets in the interval.
    pub tx_packets: u64,
    /// Dropped bits per second.
    pub dropped_bps: f64,
    /// Dropped packets in the interval.
    pub dropped_packets: u64,
    /// ECN-marked packets in the interval.
    pub marked_packets: u64,
    /// Occupancy at the end of the interval, bytes.
    pub occupancy_bytes: u64,
}

impl QueueRates {
    /// Offered load: what left plus what was turned away, bits per second.
    pub fn arrival_bps(&self) -> f64 {
        self.tx_bps + self.dropped_bps
    }

    /// HDCQ's F (HDCQ paper §3.3.2, Eq. 1): marked packets over the packets the queue
    /// passed in the interval, 0 when it passed none.
    pub fn marked_fraction(&self) -> f64 {
        if self.tx_packets == 0 {
            return 0.0;
        }
        (self.marked_packets as f64 / self.tx_packets as f64).min(1.0)
    }

    /// A queue is backlogged (wants more than it got) when it held bytes at the sample, or
    /// its threshold bit during the interval (marks or drops): its measured rate is then a
    /// floor on its demand, not the demand itself.
    pub fn is_backlogged(&self) -> bool {
        self.occupancy_bytes > 0 || self.marked_packets > 0 || self.dropped_packets > 0
    }

    /// Active: sent, dropped or held anything.
    pub fn is_active(&self) -> bool {
        self.tx_packets > 0 || self.is_backlogged()
    }
}

/// Why the estimator took a snapshot as a new baseline instead of giving a rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaselineReason {
    /// The first snapshot seen.
    First,
    /// This counter went backwards by more than a wrap could explain.
    CounterReset(&'static str),
}

/// What one new snapshot yields.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RateOutcome {
    /// A usable interval.
    Rates(QueueRates),
    /// The snapshot became the baseline; no rate this time.
    Baseline(BaselineReason),
    /// The snapshot is no newer than the baseline; ignored, the baseline is kept.
    Late {
        /// Baseline time minus snapshot time, ns (0 for a duplicate).
        behind_ns: u64,
    },
    /// No counter has changed for longer than the stale limit while the queue held bytes,
    /// so the feed (not the traffic) has stopped.
    Stale {
        /// How long the counters have been unchanged, ns.
        unchanged_for_ns: u64,
    },
}

/// Turns a stream of snapshots of one queue into rates. Pure state, no clock.
#[derive(Debug, Clone)]
pub struct RateEstimator {
    line_rate_bps: f64,
    stale_after_ns: u64,
    baseline: Option<QueueSnapshot>,
}

/// A backwards step is taken as a wrap only if the wrapped difference is at most this many
/// times what the line could have carried in the interval; otherwise it is a reset. The
/// slack covers counters read at slightly different moments than their timestamp says.
const WRAP_PLAUSIBILITY_FACTOR: f64 = 2.0;

impl RateEstimator {
    /// A new estimator for a queue on a port of `line_rate_bps`.
    pub fn new(line_rate_bps: f64, stale_after_ns: u64) -> Self {
        Self { line_rate_bps, stale_after_ns, baseline: None }
    }

    /// The baseline the next snapshot is compared with.
    pub fn baseline(&self) -> Option<&QueueSnapshot> {
        self.baseline.as_ref()
    }

    /// Feeds one snapshot.
    pub fn observe(&mut self, snap: QueueSnapshot) -> RateOutcome {
        let Some(base) = self.baseline else {
            self.rebase(snap);
            return RateOutcome::Baseline(BaselineReason::First);
        };
        if snap.at_ns <= base.at_ns {
            return RateOutcome::Late { behind_ns: base.at_ns - snap.at_ns };
        }
        let dt_ns = snap.at_ns - base.at_ns;
        if snap.counters == base.counters {
            return self.unchanged(snap, base);
        }
        match self.deltas(&base.counters, &snap.counters, dt_ns) {
            Err(field) => {
                self.rebase(snap);
                RateOutcome::Baseline(BaselineReason::CounterReset(field))
            }
            Ok(d) => {
                self.rebase(snap);
                RateOutcome::Rates(rates_from(&d, dt_ns, snap.counters.curr_occupancy_bytes))
            }
        }
    }

    fn rebase(&mut self, snap: QueueSnapshot) {
        self.baseline = Some(snap);
    }

    /// Identical counters: an idle queue (nothing held) reads as zero rates; a queue that
    /// holds bytes must be transmitting, so unchanged counters past the limit mean the feed
    /// stopped. The baseline is not moved, so the next real change spans the whole gap.
    fn unchanged(&self, snap: QueueSnapshot, base: QueueSnapshot) -> RateOutcome {
        let unchanged_for_ns = snap.at_ns - base.at_ns;
        if unchanged_for_ns > self.stale_after_ns && base.counters.curr_occupancy_bytes > 0 {
            return RateOutcome::Stale { unchanged_for_ns };
        }
        RateOutcome::Rates(rates_from(&[0; 6], snap.at_ns - base.at_ns, base.counters.curr_occupancy_bytes))
    }

    /// Differences of the monotonic counters, or the name of the first one that was reset.
    fn deltas(&self, old: &QueueCounters, new: &QueueCounters, dt_ns: u64) -> Result<[u64; 6], &'static str> {
        let max_bytes = self.line_rate_bps / 8.0 * dt_ns as f64 / 1e9 * WRAP_PLAUSIBILITY_FACTOR;
        let mut out = [0u64; 6];
        for (i, ((name, a), (_, b))) in old.monotonic().into_iter().zip(new.monotonic()).enumerate() {
            let d = b.wrapping_sub(a);
            if b < a && d as f64 > max_bytes {
                return Err(name);
            }
            out[i] = d;
        }
        Ok(out)
    }
}

fn rates_from(d: &[u64; 6], dt_ns: u64, occupancy_bytes: u64) -> QueueRates {
    let per_sec = 1e9 / dt_ns as f64;
    QueueRates {
        dt_ns,
        tx_packets: d[0],
        tx_bps: d[1] as f64 * 8.0 * per_sec,
        dropped_packets: d[2],
        dropped_bps: d[3] as f64 * 8.0 * per_sec,
        marked_packets: d[4],
        occupancy_bytes,
    }
}
