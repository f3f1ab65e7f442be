//! Per-flow sequence accounting: received, lost, reordered, duplicated.
//!
//! The wire carries a 32-bit sequence number; [`SeqTracker`] extends it to 64 bits against the
//! highest number seen so far, so a flow may run past `u32::MAX` (≈ 4.3 G packets, 1 h 20 min at
//! 1 Mpps) without a glitch, as long as the flow never jumps by 2^31 or more at once.
//!
//! Loss is never decided packet by packet: it is `expected − unique received`, computed when
//! asked ([`SeqTracker::lost`]), so a late packet that fills a gap simply stops being lost.
//! `expected` is the sender's own count when it is known (from a Fin or from the in-process
//! sender), otherwise the highest sequence number seen + 1 (which cannot see loss at the tail).
//!
//! Duplicates are found with a sliding bitmap of the last `window` sequence numbers below the
//! highest one seen: [`WINDOW`] (65536 numbers, 8 KiB) by default, smaller when there are many
//! flows (see [`window_for_flows`]). A packet older than that cannot be checked: it is counted as
//! received and reordered (by far the likelier case: a late packet, not a copy) and also in
//! [`SeqCounts::beyond_window`], so a report can say how many packets were classified blind.

/// The default duplicate window: sequence numbers remembered below the highest one seen.
pub const WINDOW: u64 = 1 << 16;
/// The smallest window [`window_for_flows`] hands out.
pub const MIN_WINDOW: u64 = 1 << 11;
/// Bits of duplicate window all flows of one receiver may use together (16 MiB).
const WINDOW_BUDGET_BITS: u64 = 1 << 27;

/// The duplicate window per flow when `flows` flows share one receiver: [`WINDOW`], shrunk so
/// that all windows together stay within 16 MiB, but never below [`MIN_WINDOW`].
pub fn window_for_flows(flows: usize) -> u64 {
    let share = WINDOW_BUDGET_BITS / (flows.max(1) as u64);
    // Round down to a power of two so the slot of a number is a mask away.
    let share = if share.is_power_of_two() {
        share
    } else {
        share.next_power_of_two() / 2
    };
    share.clamp(MIN_WINDOW, WINDOW)
}

/// What one flow's receiver has counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeqCounts {
    /// Distinct sequence numbers received (duplicates not included).
    pub unique: u64,
    /// Packets that arrived after a packet with a higher sequence number.
    pub reordered: u64,
    /// Copies of a sequence number already received.
    pub duplicates: u64,
    /// Packets older than the duplicate window: counted as unique and reordered, unverified.
    pub beyond_window: u64,
    /// Highest extended sequence number seen + 1 (0 when nothing arrived).
    pub max_seen_plus_one: u64,
}

/// Sequence accounting for one flow.
#[derive(Debug, Clone)]
pub struct SeqTracker {
    counts: SeqCounts,
    /// Bit `s % window` is set when sequence `s` (within `window` of the highest) has been seen.
    seen: Box<[u64]>,
    /// A power of two, ≥ 64.
    window: u64,
}

impl Default for SeqTracker {
    fn default() -> Self {
        Self::new()
    }
}

/// What [`SeqTracker::record`] made of one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// The next expected number, or one past a gap.
    InOrder,
    /// New, but a higher number had already arrived.
    Reordered,
    Duplicate,
}

impl SeqTracker {
    /// A tracker with the default [`WINDOW`].
    pub fn new() -> SeqTracker {
        Self::with_window(WINDOW)
    }

    /// A tracker that remembers `window` sequence numbers (rounded up to a power of two ≥ 64).
    pub fn with_window(window: u64) -> SeqTracker {
        let window = window.max(64).next_power_of_two();
        SeqTracker {
            counts: SeqCounts::default(),
            seen: vec![0; (window / 64) as usize].into_boxed_slice(),
            window,
        }
    }

    /// How many sequence numbers below the highest one duplicates are detected for.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// The 64-bit sequence number nearest to the highest one seen whose low 32 bits are `wire`;
    /// `None` if that would be below 0 (garbage, or a packet from before a reset).
    #[inline]
    fn extend(&self, wire: u32) -> Option<u64> {
        let reference = self.counts.max_seen_plus_one.saturating_sub(1);
        let delta = i64::from(wire.wrapping_sub(reference as u32) as i32);
        u64::try_from(reference as i64 + delta).ok()
    }

    #[inline]
    fn bit(&self, s: u64) -> (usize, u64) {
        (((s & (self.window - 1)) / 64) as usize, 1u64 << (s % 64))
    }

    /// Forgets the window bits of sequences `from..to` (they have not arrived; their slots are
    /// reused for the new, higher numbers).
    fn clear_range(&mut self, from: u64, to: u64) {
        if to - from >= self.window {
            self.seen.fill(0);
            return;
        }
        let mut s = from;
        while s < to {
            let (w, b) = self.bit(s);
            if s & 63 == 0 && to - s >= 64 {
                self.seen[w] = 0;
                s += 64;
            } else {
                self.seen[w] &= !b;
                s += 1;
            }
        }
    }

    /// Accounts one arriving packet with wire sequence number `wire`.
    #[inline]
    pub fn record(&mut self, wire: u32) -> Arrival {
        let Some(s) = self.extend(wire) else {
            self.counts.unique += 1;
            self.counts.reordered += 1;
            self.counts.beyond_window += 1;
            return Arrival::Reordered;
        };
        let next = self.counts.max_seen_plus_one;
        if s >= next {
            if s > next {
                self.clear_range(next, s);
            }
            let (w, b) = self.bit(s);
            self.seen[w] |= b;
            self.counts.max_seen_plus_one = s + 1;
            self.counts.unique += 1;
            return Arrival::InOrder;
        }
        if next - s > self.window {
            self.counts.unique += 1;
            self.counts.reordered += 1;
            self.counts.beyond_window += 1;
            return Arrival::Reordered;
        }
        let (w, b) = self.bit(s);
        if self.seen[w] & b != 0 {
            self.counts.duplicates += 1;
            Arrival::Duplicate
        } else {
            self.seen[w] |= b;
            self.counts.unique += 1;
            self.counts.reordered += 1;
            Arrival::Reordered
        }
    }

    pub fn counts(&self) -> SeqCounts {
        self.counts
    }

    /// Packets lost: `expected − unique`, where `expected` is the sender's count if given, else
    /// the highest sequence seen + 1. Never negative (a sender that under-reports is not our loss).
    pub fn lost(&self, sender_count: Option<u64>) -> u64 {
        sender_count
            .unwrap_or(self.counts.max_seen_plus_one)
            .saturating_sub(self.counts.unique)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn feed(seqs: &[u32]) -> SeqTracker {
        let mut t = SeqTracker::new();
        for &s in seqs {
            t.record(s);
        }
        t
    }

    #[test]
    fn in_order_no_loss() {
        let t = feed(&[0, 1, 2, 3]);
        assert_eq!(t.counts().unique, 4);
        assert_eq!(t.lost(None), 0);
        assert_eq!(t.lost(Some(4)), 0);
        assert_eq!(t.counts().reordered, 0);
    }

    #[test]
    fn gap_is_loss_and_tail_loss_needs_sender_count() {
        let t = feed(&[0, 1, 4, 5]);
        assert_eq!(t.lost(None), 2);
        assert_eq!(t.lost(Some(8)), 4);
    }

    #[test]
    fn first_packets_missing_count_as_lost() {
        let t = feed(&[3, 4]);
        assert_eq!(t.lost(None), 3);
    }

    #[test]
    fn late_packet_fills_gap_and_is_reordered_not_lost() {
        let mut t = feed(&[0, 2, 3]);
        assert_eq!(t.lost(None), 1);
        assert_eq!(t.record(1), Arrival::Reordered);
        assert_eq!(t.lost(None), 0);
        assert_eq!(t.counts().reordered, 1);
        assert_eq!(t.counts().duplicates, 0);
    }

    #[test]
    fn duplicates_counted_once() {
        let mut t = feed(&[0, 1, 2]);
        assert_eq!(t.record(1), Arrival::Duplicate);
        assert_eq!(t.record(2), Arrival::Duplicate);
        let c = t.counts();
        assert_eq!((c.unique, c.duplicates, c.reordered), (3, 2, 0));
        assert_eq!(t.lost(Some(3)), 0);
    }

    #[test]
    fn wraps_across_u32_max() {
        let mut t = SeqTracker::new();
        // Walk up to just below the wrap in big steps (each step is a gap, i.e. loss).
        let mut s: u64 = 0;
        while s < u64::from(u32::MAX) - 10 {
            t.record(s as u32);
            s += 1 << 30;
        }
        let before = t.counts();
        let near = u32::MAX - 2;
        for w in [near, near + 1, near + 2, 0, 1, 2] {
            assert_eq!(t.record(w), Arrival::InOrder, "wire {w}");
        }
        let c = t.counts();
        assert_eq!(c.unique, before.unique + 6);
        assert_eq!(c.max_seen_plus_one, (1u64 << 32) + 3);
        // A late packet from before the wrap is reordered, not a huge jump forward.
        assert_eq!(t.record(u32::MAX - 5), Arrival::Reordered);
        assert_eq!(t.record(u32::MAX), Arrival::Duplicate);
    }

    #[test]
    fn beyond_window_is_counted_blind() {
        let mut t = SeqTracker::new();
        t.record(0);
        t.record((WINDOW + 10) as u32);
        assert_eq!(t.record(0), Arrival::Reordered);
        assert_eq!(t.counts().beyond_window, 1);
    }

    #[test]
    fn window_shrinks_with_many_flows_within_bounds() {
        assert_eq!(window_for_flows(1), WINDOW);
        assert_eq!(window_for_flows(2048), WINDOW);
        assert_eq!(window_for_flows(3000), 1 << 15);
        assert_eq!(window_for_flows(65536), MIN_WINDOW);
        let mut t = SeqTracker::with_window(100);
        assert_eq!(t.window(), 128);
        t.record(0);
        t.record(200);
        assert_eq!(t.record(0), Arrival::Reordered);
        assert_eq!(t.counts().beyond_window, 1);
        assert_eq!(t.record(150), Arrival::Reordered);
        assert_eq!(t.record(150), Arrival::Duplicate);
    }

    #[test]
    fn window_slots_are_reused_after_a_jump() {
        // After jumping ahead, the slot of an old number must not make a new one a duplicate.
        let mut t = SeqTracker::new();
        t.record(5);
        assert_eq!(t.record((WINDOW + 5) as u32), Arrival::InOrder);
        t.record(3);
        assert_eq!(t.record((WINDOW + 3) as u32), Arrival::Reordered);
        assert_eq!(t.counts().duplicates, 0);
    }

    proptest! {
        /// Any mix of drops, duplicates and local reordering gives exact counts.
        #[test]
        fn random_permutation_with_drops_and_dups(
            n in 1u64..3000,
            base in prop_oneof![Just(0u64), Just(u64::from(u32::MAX) - 1500)],
            drops in proptest::collection::vec(any::<bool>(), 3000),
            dups in proptest::collection::vec(0u8..4, 3000),
            shuffle_seed in any::<u64>(),
            max_shift in 0usize..200,
        ) {
            // The flow starts at `base` (so some cases cross the 32-bit wrap); the tracker first
            // sees `base` itself so that extension starts from there.
            let mut arrivals: Vec<u64> = Vec::new();
            let mut sent_unique = 0u64;
            for i in 0..n {
                let idx = i as usize;
                if i > 0 && drops[idx] && dups[idx] == 0 { continue; }
                sent_unique += 1;
                let copies = if i == 0 { 1 } else { 1 + u64::from(dups[idx] == 3) };
                for _ in 0..copies { arrivals.push(base + i); }
            }
            // Local reordering: swap each element with one up to `max_shift` later, but keep the
            // first arrival in place so the 64-bit extension has its anchor.
            let mut rng = shuffle_seed;
            for i in 1..arrivals.len() {
                rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let j = i + (rng >> 33) as usize % (max_shift + 1);
                if j < arrivals.len() { arrivals.swap(i, j); }
            }
            let mut t = SeqTracker::new();
            // Anchor at base: pretend packets below base were never part of this flow.
            t.counts.max_seen_plus_one = base;
            let mut reordered = 0u64;
            let mut highest: Option<u64> = None;
            let mut seen = std::collections::HashSet::new();
            let mut dup_count = 0u64;
            for &a in &arrivals {
                if !seen.insert(a) { dup_count += 1; }
                else if highest.is_some_and(|h| a < h) { reordered += 1; }
                highest = Some(highest.map_or(a, |h| h.max(a)));
                t.record(a as u32);
            }
            let c = t.counts();
            prop_assert_eq!(c.unique, sent_unique);
            prop_assert_eq!(c.duplicates, dup_count);
            prop_assert_eq!(c.reordered, reordered);
            prop_assert_eq!(c.beyond_window, 0);
            prop_assert_eq!(t.lost(Some(n)), n - sent_unique);
        }
    }
}
