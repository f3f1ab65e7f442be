//! The planners: which trial comes next, in a [`Campaign`](crate::Campaign).
//!
//! - [`search`]: per frame size, the highest rate within each loss tolerance;
//! - [`sweep`]: the UDP size × interval grid, a knee per size and counting point;
//! - [`flows`]: TCP throughput over flow counts, and where adding flows stops paying;
//! - [`param`]: one `run` per combination of parameter values.
//!
//! Each takes typed parameters and a campaign, tells the session's observers its steps, ends
//! the campaign with the run's knees and notes filled in, and returns what it found, typed.
//! The command line (flags, tables, exit codes) is the binary's.

pub mod flows;
pub mod param;
pub mod search;
pub mod sweep;

use netceil_model::params::UdpParams;
use netceil_model::PacingMode;
use std::net::SocketAddr;

/// Where a planner's UDP trains go: a far end (`None`: loopback), over IPv6 or not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reach {
    pub to: Option<SocketAddr>,
    pub ipv6: bool,
}

/// A UDP train's parameters for a search or a sweep step: the payload, the pacing and the
/// receiver's buffer, sent where `reach` says; the rest as `netceil run udp` has them by
/// default.
pub fn udp_train(
    reach: Reach,
    payload_bytes: usize,
    pacing: PacingMode,
    rcvbuf: Option<usize>,
    rcvbuf_force: bool,
) -> UdpParams {
    UdpParams {
        pacing,
        ipv6: reach.ipv6,
        target: reach.to.map(|t| t.to_string()),
        rcvbuf,
        rcvbuf_force,
        ..crate::udp_defaults(payload_bytes)
    }
    .with_frame()
}
