//! A long-lived, ECN-reactive source for closed-loop runs: a window of packets in flight,
//! paced at its NIC rate, reacting to CE echoes like DCTCP or like classic ECN.
//!
//! The model is deliberately small (no handshake, no timers): an ACK comes back one base RTT
//! after the packet left the switch and echoes its CE bit; a drop is noticed one base RTT after
//! it happened. Reaction, per DCTCP (Alizadeh et al., SIGCOMM 2010, as MQ-ECN's evaluation uses
//! it, NSDI 2016 §5):
//! - once per window of data (about one RTT): `alpha <- (1 - g) alpha + g F`, `F` the fraction
//!   of that window's ACKs that echoed CE;
//! - on a CE echo, at most once per window: `cwnd <- cwnd (1 - alpha / 2)`;
//! - otherwise additive increase, `cwnd += 1 / cwnd` per ACK;
//! - a drop halves `cwnd`, at most once per window.
//!
//! Classic ECN (ECN*, RFC 3168 style) halves `cwnd` on a CE echo instead, once per window.

/// How a source reacts to CE echoes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reaction {
    /// DCTCP: reduce by `alpha / 2`.
    Dctcp,
    /// Classic ECN: halve.
    ClassicEcn,
}

/// A source's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SourceConfig {
    /// Packet size, bytes.
    pub packet_bytes: u32,
    /// The source's NIC rate, bit/s (its pacing limit).
    pub nic_bps: f64,
    /// Round-trip time without queueing at the switch, ns.
    pub base_rtt_ns: f64,
    /// DCTCP's gain g (1/16 in DCTCP).
    pub g: f64,
    /// Initial window, packets.
    pub initial_cwnd: f64,
    /// Reaction to CE.
    pub reaction: Reaction,
}

/// One source's congestion state.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    config: SourceConfig,
    cwnd: f64,
    alpha: f64,
    in_flight: u64,
    next_seq: u64,
    next_send_ns: f64,
    window_end_seq: u64,
    acked_in_window: u64,
    marked_in_window: u64,
    reduce_after_seq: u64,
}

impl Source {
    /// A source about to send its first packet.
    pub fn new(config: SourceConfig) -> Self {
        Self {
            config,
            cwnd: config.initial_cwnd.max(1.0),
            alpha: 1.0,
            in_flight: 0,
            next_seq: 0,
            next_send_ns: 0.0,
            window_end_seq: 0,
            acked_in_window: 0,
            marked_in_window: 0,
            reduce_after_seq: 0,
        }
    }

    /// Its parameters.
    pub fn config(&self) -> &SourceConfig {
        &self.config
    }

    /// Congestion window, packets.
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// DCTCP's alpha.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// When the source may send next (window permitting), ns.
    pub fn next_send_ns(&self) -> f64 {
        self.next_send_ns
    }

    /// Whether the window allows another packet.
    pub fn window_open(&self) -> bool {
        (self.in_flight as f64) < self.cwnd.floor().max(1.0)
    }

    /// Sends one packet at `now_ns`: returns its sequence number.
    pub fn send(&mut self, now_ns: f64) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.in_flight += 1;
        let gap = f64::from(self.config.packet_bytes) * 8.0 / self.config.nic_bps * 1e9;
        self.next_send_ns = now_ns.max(self.next_send_ns) + gap;
        seq
    }

    /// An ACK for `seq` arrived; `ce` if it echoes a mark.
    pub fn on_ack(&mut self, seq: u64, ce: bool) {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.acked_in_window += 1;
        self.marked_in_window += u64::from(ce);
        if ce {
            self.reduce_once(seq, self.mark_factor());
        } else {
            self.cwnd += 1.0 / self.cwnd;
        }
        if seq >= self.window_end_seq {
            let f = self.marked_in_window as f64 / self.acked_in_window as f64;
            self.alpha = (1.0 - self.config.g) * self.alpha + self.config.g * f;
            self.acked_in_window = 0;
            self.marked_in_window = 0;
            self.window_end_seq = self.next_seq;
        }
    }

    /// The switch dropped `seq` (noticed one RTT later).
    pub fn on_loss(&mut self, seq: u64) {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.reduce_once(seq, 0.5);
    }

    fn mark_factor(&self) -> f64 {
        match self.config.reaction {
            Reaction::Dctcp => 1.0 - self.alpha / 2.0,
            Reaction::ClassicEcn => 0.5,
        }
    }

    /// Multiplies the window by `factor`, at most once per window of data.
    fn reduce_once(&mut self, seq: u64, factor: f64) {
        if seq < self.reduce_after_seq {
            return;
        }
        self.cwnd = (self.cwnd * factor).max(1.0);
        self.reduce_after_seq = self.next_seq;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(reaction: Reaction) -> SourceConfig {
        SourceConfig {
            packet_bytes: 1_500,
            nic_bps: 10e9,
            base_rtt_ns: 100_000.0,
            g: 1.0 / 16.0,
            initial_cwnd: 10.0,
            reaction,
        }
    }

    #[test]
    fn window_and_pacing() {
        let mut s = Source::new(config(Reaction::Dctcp));
        for i in 0..10 {
            assert!(s.window_open());
            assert_eq!(s.send(0.0), i);
        }
        assert!(!s.window_open());
        // Ten back-to-back sends from t = 0 at 1.2 us each: next send at 12 us.
        assert!((s.next_send_ns() - 12_000.0).abs() < 1e-6);
    }

    #[test]
    fn dctcp_cuts_by_half_alpha_once_per_window() {
        let mut s = Source::new(config(Reaction::Dctcp));
        for _ in 0..10 {
            s.send(0.0);
        }
        // First ACK (seq 0) ends the initial empty window: alpha = 15/16 x 1 + 1/16 x 1 = 1;
        // CE with alpha 1: cwnd 10 x (1 - 1/2) = 5.
        s.on_ack(0, true);
        assert!((s.cwnd() - 5.0).abs() < 1e-12);
        // A second CE in the same window does not cut again.
        s.on_ack(1, true);
        assert!((s.cwnd() - 5.0).abs() < 1e-12);
        // Unmarked ACK: +1/cwnd.
        s.on_ack(2, false);
        assert!((s.cwnd() - 5.2).abs() < 1e-12);
    }

    #[test]
    fn alpha_tracks_the_marked_fraction_per_window() {
        let mut s = Source::new(config(Reaction::Dctcp));
        for _ in 0..4 {
            s.send(0.0);
        }
        // ACK 0 closes the initial window with F = 0: alpha = 15/16; the next window ends at
        // the first ACK at or past seq 4 (what was sent when it opened).
        s.on_ack(0, false);
        assert!((s.alpha() - 15.0 / 16.0).abs() < 1e-12);
        s.send(0.0);
        s.on_ack(1, true);
        s.on_ack(2, false);
        s.on_ack(3, false);
        assert!((s.alpha() - 15.0 / 16.0).abs() < 1e-12, "window still open");
        // ACK 4 closes it: 1 of 4 marked, F = 0.25.
        s.on_ack(4, false);
        let want = 15.0 / 16.0 * 15.0 / 16.0 + 0.25 / 16.0;
        assert!((s.alpha() - want).abs() < 1e-12);
    }

    #[test]
    fn classic_ecn_halves_and_loss_halves() {
        let mut s = Source::new(config(Reaction::ClassicEcn));
        for _ in 0..10 {
            s.send(0.0);
        }
        s.on_ack(0, true);
        assert!((s.cwnd() - 5.0).abs() < 1e-12);
        let mut d = Source::new(config(Reaction::Dctcp));
        for _ in 0..10 {
            d.send(0.0);
        }
        d.on_loss(3);
        assert!((d.cwnd() - 5.0).abs() < 1e-12);
    }
}
