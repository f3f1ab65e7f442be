//! What a server allows, and the check of a request against it.

use serde::{Deserialize, Serialize};

use crate::{TestKind, TestSpec};

/// A server's limits. Every one has a default; `netceil serve` flags change them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Flows (sockets or connections) in one test.
    pub max_flows: u32,
    /// Tests running at once.
    pub max_tests: u32,
    /// Packets (or transactions) per second a test may send, declared and measured.
    pub max_pps: u64,
    /// Bits per second of payload a test may send, declared and measured.
    pub max_bits_per_s: u64,
    /// Length of one test, ms.
    pub max_duration_ms: u64,
    /// Payload bytes one test may send in all.
    pub max_bytes: u64,
    /// Control connections in their handshake at once (granted tests count against
    /// `max_tests` instead); one host holds a bounded share ([`crate::Admission`]).
    pub max_clients: u32,
    /// How long each handshake step may take, ms: a silent client is dropped after it.
    pub step_timeout_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_flows: 64,
            max_tests: 2,
            max_pps: 5_000_000,
            max_bits_per_s: 40_000_000_000,
            max_duration_ms: 60_000,
            max_bytes: 64 << 30,
            max_clients: 1024,
            step_timeout_ms: 5_000,
        }
    }
}

/// Why a request was refused: what was asked and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Largest UDP payload, bytes.
const MAX_UDP_PAYLOAD: u32 = 65_507;
/// Largest TCP message size, bytes.
const MAX_TCP_MSG: u32 = 16 << 20;
/// netceil's header: a UDP payload shorter than this is not a netceil datagram.
const MIN_UDP_PAYLOAD: u32 = 18;

impl Limits {
    /// Checks a request; the refusal says what was over which limit.
    pub fn check(&self, t: &TestSpec) -> Result<(), Refusal> {
        let no = |s: String| Err(Refusal(s));
        if t.flows == 0 || t.flows > self.max_flows {
            return no(format!(
                "{} flows asked; this server allows 1 to {} per test (serve --max-flows)",
                t.flows, self.max_flows
            ));
        }
        if t.duration_ms == 0 || t.duration_ms > self.max_duration_ms {
            return no(format!(
                "a {:.1} s test asked; this server allows up to {:.1} s (serve --max-duration)",
                t.duration_ms as f64 / 1e3,
                self.max_duration_ms as f64 / 1e3
            ));
        }
        let (lo, hi) = if t.kind.is_udp() {
            (MIN_UDP_PAYLOAD, MAX_UDP_PAYLOAD)
        } else {
            (1, MAX_TCP_MSG)
        };
        if t.payload_bytes < lo || t.payload_bytes > hi {
            return no(format!(
                "a {}-byte {} payload asked; {lo} to {hi} bytes are possible",
                t.payload_bytes,
                t.kind.name()
            ));
        }
        if !(100..=60_000).contains(&t.sample_ms) {
            return no(format!(
                "a {} ms sampling interval asked; 100 ms to 60 s are served",
                t.sample_ms
            ));
        }
        if let Some(pps) = t.rate_pps {
            if pps == 0 || pps > self.max_pps {
                return no(format!(
                    "{pps} packets/s asked; this server allows up to {} (serve --max-rate)",
                    self.max_pps
                ));
            }
            let bits = pps
                .saturating_mul(u64::from(t.payload_bytes))
                .saturating_mul(8);
            if bits > self.max_bits_per_s && t.kind != TestKind::Tcp {
                return no(format!(
                    "{pps} packets/s of {} bytes is {bits} bit/s; this server allows up to {} (serve --max-bits)",
                    t.payload_bytes, self.max_bits_per_s
                ));
            }
        }
        if let Some(bits) = t.rate_bits_per_s {
            if bits == 0 || bits > self.max_bits_per_s {
                return no(format!(
                    "{bits} bit/s asked; this server allows up to {} (serve --max-bits)",
                    self.max_bits_per_s
                ));
            }
        }
        Ok(())
    }

    /// Payload bytes a test may send in `duration_ms` at most, given the byte limit and the
    /// rate limit (with a 25 % margin for pacing bursts and timer slack).
    pub fn byte_budget(&self, t: &TestSpec) -> u64 {
        let secs = t.duration_ms as f64 / 1e3;
        let bits = t.rate_bits_per_s.unwrap_or(self.max_bits_per_s) as f64;
        let by_rate = (bits / 8.0 * secs * 1.25) as u64;
        by_rate.min(self.max_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> TestSpec {
        TestSpec {
            kind: TestKind::Udp,
            flows: 4,
            duration_ms: 10_000,
            payload_bytes: 18,
            rate_pps: Some(100_000),
            rate_bits_per_s: None,
            run_id: 1,
            sample_ms: 1000,
            gro: false,
            tcp_rcvbuf: None,
            tcp_wake_each: false,
        }
    }

    #[test]
    fn requests_within_the_limits_pass_and_others_say_why() {
        let l = Limits::default();
        assert_eq!(l.check(&t()), Ok(()));
        let cases: Vec<(TestSpec, &str)> = vec![
            (TestSpec { flows: 0, ..t() }, "flows"),
            (TestSpec { flows: 65, ..t() }, "--max-flows"),
            (
                TestSpec {
                    duration_ms: 0,
                    ..t()
                },
                "--max-duration",
            ),
            (
                TestSpec {
                    duration_ms: u64::MAX,
                    ..t()
                },
                "--max-duration",
            ),
            (
                TestSpec {
                    payload_bytes: 17,
                    ..t()
                },
                "payload",
            ),
            (
                TestSpec {
                    payload_bytes: 70_000,
                    ..t()
                },
                "payload",
            ),
            (
                TestSpec {
                    rate_pps: Some(0),
                    ..t()
                },
                "--max-rate",
            ),
            (
                TestSpec {
                    rate_pps: Some(u64::MAX),
                    ..t()
                },
                "--max-rate",
            ),
            (
                TestSpec {
                    rate_pps: Some(4_000_000),
                    payload_bytes: 65_000,
                    ..t()
                },
                "--max-bits",
            ),
            (
                TestSpec {
                    rate_bits_per_s: Some(u64::MAX),
                    ..t()
                },
                "--max-bits",
            ),
            (
                TestSpec {
                    sample_ms: 5,
                    ..t()
                },
                "sampling",
            ),
        ];
        for (spec, word) in cases {
            let e = l.check(&spec).unwrap_err().0;
            assert!(e.contains(word), "{spec:?}: {e}");
        }
    }

    #[test]
    fn the_byte_budget_follows_the_declared_rate() {
        let l = Limits::default();
        let slow = TestSpec {
            rate_bits_per_s: Some(8_000_000),
            ..t()
        };
        assert_eq!(l.byte_budget(&slow), 12_500_000); // 1 MB/s × 10 s × 1.25
        let unpaced = TestSpec {
            rate_bits_per_s: None,
            ..t()
        };
        // Unpaced: what the rate limit allows in the time (40 Gbit/s × 10 s × 1.25).
        assert_eq!(l.byte_budget(&unpaced), 62_500_000_000);
        let long = TestSpec {
            duration_ms: 60_000,
            ..unpaced
        };
        assert_eq!(l.byte_budget(&long), l.max_bytes);
    }
}
