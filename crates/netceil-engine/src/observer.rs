//! Who watches a running session: the terminal's live table, a progress bar, a metrics
//! endpoint, a JSON stream. Each is an [`Observer`]; the session tells every one of them the
//! same things in the same order.

use netceil_probe::Row;
use serde::Serialize;
use std::time::Duration;

pub mod json;
#[cfg(test)]
mod live_snapshots;
pub mod table;
pub mod terminal;

/// What the workload measured in one interval, beside the machine's row of that interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LoadFigures {
    pub tx_pps: Option<f64>,
    pub rx_pps: Option<f64>,
    /// TCP: the flows this side sends (up), as written and as read by their receiver.
    pub tx_bits_per_s: Option<f64>,
    pub rx_bits_per_s: Option<f64>,
    /// TCP: the flows the far side sends (down: -R, --bidir, rrul), as written there and as
    /// read here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_tx_bits_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_rx_bits_per_s: Option<f64>,
    pub lost: Option<u64>,
    pub tps: Option<f64>,
    pub mean_latency_us: Option<f64>,
}

/// Which figures a trial reports as it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadKind {
    /// Packets out and in, bits in, datagrams lost.
    Udp,
    /// Bits out and in.
    Tcp,
    /// Bits out and in of the flows the far side sends (-R).
    TcpDown,
    /// Bits out and in each way (--bidir).
    TcpBoth,
    /// Latency under load: the probe's round trip alone, then the flows each way.
    Rrul,
    /// Transactions, mean latency, requests lost.
    Rr,
}

/// A trial starting.
#[derive(Debug, Clone)]
pub struct PartStart {
    /// What runs, in words: `udp 18 B payload (64 B frame)`.
    pub title: String,
    /// How long it is planned to run.
    pub length: Duration,
    pub kind: LoadKind,
}

/// Something shown what a session measures, as it measures it. Every method has a default
/// that ignores the event, so each observer implements only what it shows.
pub trait Observer {
    /// A trial begins.
    fn begin(&mut self, _part: &PartStart) {}
    /// One progress report of the running trial: the machine's newest row (its `t_s` set to
    /// the trial's elapsed time) and the workload's figures of the same interval.
    fn progress(&mut self, _elapsed_s: f64, _row: &Row, _load: &LoadFigures) {}
    /// The trial ended.
    fn end(&mut self) {}
    /// Rows as they are recorded, every one of them, in batches.
    fn rows(&mut self, _rows: &[Row]) {}
    /// A planner's step done (a search's trial, a sweep's cell), in words.
    fn step(&mut self, _line: &str) {}
    /// A planner's line that is no step (what it does next).
    fn say(&mut self, _line: &str) {}
    /// The planner's worst case for what is left: at most this many seconds.
    fn remaining(&mut self, _at_most_s: f64) {}
    /// The campaign ended: nothing more comes.
    fn close(&mut self) {}
    /// What the run's notes should say of this observer once it is closed (a stream that
    /// stopped early), if anything.
    fn note(&self) -> Option<String> {
        None
    }
}
