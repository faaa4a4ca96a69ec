//! Priority-based flow control (PFC, IEEE 802.1Qbb) at a switch's ingress, per port and
//! lossless priority: the bytes a priority group holds for that ingress port, the PAUSE and
//! RESUME it sends upstream, and the headroom that takes what is still in flight.
//!
//! The mechanism (IEEE 802.1Qbb; Guo et al., "RDMA over Commodity Ethernet at Scale",
//! SIGCOMM 2016, §2-3): when a priority group's bytes reach its XOFF point, the switch sends
//! PAUSE for the priority to the upstream port, whose egress queue of that priority stops;
//! the bytes already on the wire, in the peer's pipeline and in the frame it had begun still
//! arrive, and the group's headroom must hold them. When the group drains below its XON
//! point the switch sends RESUME (a PAUSE of zero quanta), and the upstream queue goes on. A
//! PAUSE lasts its quanta (65535 x 512 bit times at most); a switch still above XON sends it
//! again before it expires, so the pause holds until RESUME: those refreshes are counted as
//! frames, the pause itself never lapses here.
//!
//! A lossless priority never drops. A packet that would take its group past XOFF point plus
//! headroom is counted as an overflow: that is a lossless loss, the failure a check of the
//! computed headroom must catch.

use serde::{Deserialize, Serialize};

/// Bits in one PAUSE quantum (IEEE 802.3 Annex 31B: a quantum is 512 bit times).
pub const QUANTUM_BITS: f64 = 512.0;

/// What a lossless priority group is configured with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PfcThresholds {
    /// PAUSE is sent when the group holds this many bytes (the XOFF point).
    pub xoff_bytes: u64,
    /// RESUME is sent when the group holds fewer bytes than this (the XON point, below XOFF).
    pub xon_bytes: u64,
    /// Bytes the group may hold above the XOFF point, for what arrives after PAUSE.
    pub headroom_bytes: u64,
    /// Quanta a PAUSE carries (65535, the most, by default).
    #[serde(default = "default_quanta")]
    pub pause_quanta: u16,
}

fn default_quanta() -> u16 {
    u16::MAX
}

/// Thresholds that cannot work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PfcError {
    /// XON must lie below XOFF, or the group would resume at once.
    #[error("PFC xon {xon_bytes} B must be below xoff {xoff_bytes} B")]
    XonNotBelowXoff {
        /// The XON point.
        xon_bytes: u64,
        /// The XOFF point.
        xoff_bytes: u64,
    },
    /// A PAUSE of zero quanta is a RESUME.
    #[error("PFC pause quanta must be at least 1")]
    NoQuanta,
}

impl PfcThresholds {
    /// Checks the thresholds can run.
    pub fn check(&self) -> Result<(), PfcError> {
        if self.xon_bytes >= self.xoff_bytes {
            return Err(PfcError::XonNotBelowXoff { xon_bytes: self.xon_bytes, xoff_bytes: self.xoff_bytes });
        }
        if self.pause_quanta == 0 {
            return Err(PfcError::NoQuanta);
        }
        Ok(())
    }

    /// How long a PAUSE holds a link of `link_bps`, ns.
    pub fn pause_ns(&self, link_bps: f64) -> f64 {
        f64::from(self.pause_quanta) * QUANTUM_BITS / link_bps * 1e9
    }
}

/// A frame the group sends upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PfcFrame {
    /// Stop the priority.
    Pause,
    /// Go on (a PAUSE of zero quanta).
    Resume,
}

/// What happens to a packet arriving for the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Held; with the frame it makes the switch send, if any.
    Held(Option<PfcFrame>),
    /// Past XOFF point plus headroom: a lossless loss.
    Overflow,
}

/// One ingress port's priority group for one lossless priority.
#[derive(Debug, Clone, PartialEq)]
pub struct PriorityGroup {
    thresholds: PfcThresholds,
    /// A PAUSE is sent again after this long while the group stays paused, ns.
    refresh_ns: f64,
    held: u64,
    peak: u64,
    paused_since: Option<f64>,
    paused_ns: f64,
    pause_frames: u64,
    resume_frames: u64,
    overflow_packets: u64,
}

impl PriorityGroup {
    /// A group with these thresholds on a link of `link_bps`: a pause is refreshed at half its
    /// quanta, as a switch does to keep the peer stopped.
    pub fn new(thresholds: PfcThresholds, link_bps: f64) -> Result<Self, PfcError> {
        thresholds.check()?;
        Ok(Self {
            thresholds,
            refresh_ns: thresholds.pause_ns(link_bps) / 2.0,
            held: 0,
            peak: 0,
            paused_since: None,
            paused_ns: 0.0,
            pause_frames: 0,
            resume_frames: 0,
            overflow_packets: 0,
        })
    }

    /// A packet of `bytes` arrives at `now_ns`.
    pub fn admit(&mut self, now_ns: f64, bytes: u64) -> Admission {
        let limit = self.thresholds.xoff_bytes.saturating_add(self.thresholds.headroom_bytes);
        if self.held + bytes > limit {
            self.overflow_packets += 1;
            return Admission::Overflow;
        }
        self.held += bytes;
        self.peak = self.peak.max(self.held);
        if self.paused_since.is_none() && self.held >= self.thresholds.xoff_bytes {
            self.paused_since = Some(now_ns);
            self.pause_frames += 1;
            return Admission::Held(Some(PfcFrame::Pause));
        }
        Admission::Held(None)
    }

    /// A packet of `bytes` it held leaves the switch at `now_ns`.
    pub fn release(&mut self, now_ns: f64, bytes: u64) -> Option<PfcFrame> {
        self.held = self.held.saturating_sub(bytes);
        let since = self.paused_since?;
        if self.held >= self.thresholds.xon_bytes {
            return None;
        }
        let lasted = now_ns - since;
        self.paused_ns += lasted;
        // Refreshes sent while it lasted (the first PAUSE is counted when sent).
        self.pause_frames += (lasted / self.refresh_ns).floor() as u64;
        self.paused_since = None;
        self.resume_frames += 1;
        Some(PfcFrame::Resume)
    }

    /// Bytes held now.
    pub fn held(&self) -> u64 {
        self.held
    }

    /// Whether the group has the upstream paused.
    pub fn is_paused(&self) -> bool {
        self.paused_since.is_some()
    }

    /// The counts at `now_ns` (a pause still on counts up to now).
    pub fn stats(&self, now_ns: f64) -> PfcStats {
        let ongoing = self.paused_since.map_or(0.0, |since| now_ns - since);
        PfcStats {
            pause_frames: self.pause_frames + (ongoing / self.refresh_ns).floor() as u64,
            resume_frames: self.resume_frames,
            paused_ns: self.paused_ns + ongoing,
            peak_bytes: self.peak,
            overflow_packets: self.overflow_packets,
        }
    }
}

/// PFC counts of one group or summed over many.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct PfcStats {
    /// PAUSE frames sent (the first of each pause and its refreshes).
    pub pause_frames: u64,
    /// RESUME frames sent.
    pub resume_frames: u64,
    /// Time the upstream was held paused, ns.
    pub paused_ns: f64,
    /// Most bytes held at once (the largest over the groups when summed).
    pub peak_bytes: u64,
    /// Packets past XOFF point plus headroom: lossless losses.
    pub overflow_packets: u64,
}

impl PfcStats {
    /// The counts of two sets of groups together.
    pub fn combined(self, other: PfcStats) -> PfcStats {
        PfcStats {
            pause_frames: self.pause_frames + other.pause_frames,
            resume_frames: self.resume_frames + other.resume_frames,
            paused_ns: self.paused_ns + other.paused_ns,
            peak_bytes: self.peak_bytes.max(other.peak_bytes),
            overflow_packets: self.overflow_packets + other.overflow_packets,
        }
    }
}

/// One lossless queue's share of a run's PFC: its groups on every switch ingress port, its
/// packets lost in the switches, the CNPs its flows' receivers sent.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct QueuePfc {
    /// The lossless queue (its PFC priority).
    pub queue: usize,
    /// Its groups, summed over every switch ingress port.
    pub groups: PfcStats,
    /// Its packets dropped in the switches (headroom overflow or egress queue).
    pub lossless_dropped_packets: u64,
    /// CNPs sent for its flows' marked packets.
    pub cnps: u64,
}

/// A run's PFC: every switch ingress group summed, and by the kind of port that sent the
/// frames (a pause from a leaf's host port stops a host; from a leaf's uplink, a spine; from a
/// spine's port, a leaf's uplink: pauses beyond the host ports are PFC spreading into the
/// fabric).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct PfcReport {
    /// The lossless queues.
    pub queues: Vec<usize>,
    /// Every group.
    pub all: PfcStats,
    /// Leaf ports facing hosts.
    pub leaf_down: PfcStats,
    /// Leaf ports facing spines.
    pub leaf_up: PfcStats,
    /// Spine ports.
    pub spine: PfcStats,
    /// Lossless packets dropped anywhere in the switches (headroom overflow or egress buffer).
    pub lossless_dropped_packets: u64,
    /// DCQCN CNPs the receivers sent.
    pub cnps: u64,
    /// The same per lossless queue, in the order of `queues`.
    pub by_queue: Vec<QueuePfc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const HUNDRED_G: f64 = 100e9;

    fn group() -> PriorityGroup {
        let t = PfcThresholds {
            xoff_bytes: 10_000,
            xon_bytes: 6_000,
            headroom_bytes: 3_000,
            pause_quanta: 65_535,
        };
        PriorityGroup::new(t, HUNDRED_G).unwrap()
    }

    #[test]
    fn pause_at_xoff_resume_below_xon_and_the_pause_time_between() {
        let mut pg = group();
        for i in 0..6 {
            assert_eq!(pg.admit(f64::from(i), 1_500), Admission::Held(None), "packet {i}");
        }
        // 9 000 B held: the seventh packet reaches 10 500 >= xoff.
        assert_eq!(pg.admit(10.0, 1_500), Admission::Held(Some(PfcFrame::Pause)));
        assert!(pg.is_paused());
        // Still paused: no second PAUSE for the next arrival.
        assert_eq!(pg.admit(11.0, 1_500), Admission::Held(None));
        // 12 000 -> 10 500 -> 9 000 -> 7 500 -> 6 000: not yet below xon.
        for t in [20.0, 21.0, 22.0, 23.0] {
            assert_eq!(pg.release(t, 1_500), None);
        }
        assert_eq!(pg.release(110.0, 1_500), Some(PfcFrame::Resume));
        let s = pg.stats(200.0);
        assert_eq!((s.pause_frames, s.resume_frames), (1, 1));
        assert_eq!(s.paused_ns, 100.0);
        assert_eq!(s.peak_bytes, 12_000);
    }

    #[test]
    fn headroom_takes_what_arrives_after_pause_and_past_it_is_a_loss() {
        let mut pg = group();
        // xoff 10 000 + headroom 3 000 = 13 000 B: eight packets of 1 500 fit (12 000), the
        // ninth (13 500) does not.
        for _ in 0..8 {
            assert!(matches!(pg.admit(0.0, 1_500), Admission::Held(_)));
        }
        assert_eq!(pg.admit(0.0, 1_500), Admission::Overflow);
        assert_eq!(pg.held(), 12_000);
        assert_eq!(pg.stats(0.0).overflow_packets, 1);
    }

    #[test]
    fn a_long_pause_is_refreshed_at_half_its_quanta() {
        // 65535 quanta x 512 bit at 100 Gb/s = 335.5392 us; refreshed every 167.7696 us.
        let mut pg = group();
        assert_eq!(pg.thresholds.pause_ns(HUNDRED_G), 335_539.2);
        pg.admit(0.0, 10_000);
        // Paused 400 us: the first PAUSE and two refreshes (at 167.8 and 335.5 us).
        assert_eq!(pg.stats(400_000.0).pause_frames, 3);
        assert_eq!(pg.release(400_000.0, 10_000), Some(PfcFrame::Resume));
        assert_eq!(pg.stats(1e9).pause_frames, 3);
    }

    #[test]
    fn thresholds_that_cannot_work_are_refused() {
        let t = PfcThresholds { xoff_bytes: 5_000, xon_bytes: 5_000, headroom_bytes: 1, pause_quanta: 1 };
        assert_eq!(
            PriorityGroup::new(t, HUNDRED_G),
            Err(PfcError::XonNotBelowXoff { xon_bytes: 5_000, xoff_bytes: 5_000 })
        );
        let t = PfcThresholds { xon_bytes: 1, pause_quanta: 0, ..t };
        assert_eq!(PriorityGroup::new(t, HUNDRED_G), Err(PfcError::NoQuanta));
    }
}
