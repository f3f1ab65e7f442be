//! The messages. Field names are the wire format; unknown fields are refused.

use netceil_model::FarEnd;
use serde::{Deserialize, Serialize};

use crate::Limits;

/// What a client sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientMsg {
    /// The first message: who is asking, and a fresh nonce. `pad` makes the frame at least
    /// [`crate::MIN_HELLO_FRAME`] bytes.
    Hello {
        proto: u32,
        netceil: String,
        nonce: String,
        pad: String,
    },
    /// The test wanted, with `mac` = HMAC-SHA256(key, both nonces and the test) when the server
    /// asked for a key.
    Request { test: TestSpec, mac: Option<String> },
    /// The client's load has ended: report and close.
    Done {},
}

/// What a server sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ServerMsg {
    Challenge {
        proto: u32,
        netceil: String,
        nonce: String,
        key_required: bool,
    },
    /// No test, and why. The shape every version keeps, so a version skew still reads.
    Refused {
        proto: u32,
        reason: String,
    },
    Grant(Grant),
    Report(Box<FarEnd>),
}

/// The kinds of test a server runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestKind {
    /// UDP trains: counted by sequence number.
    Udp,
    /// TCP streams: sunk.
    Tcp,
    /// Request/response over UDP: requests echoed.
    RrUdp,
    /// Request/response over TCP: bytes echoed.
    RrTcp,
}

impl TestKind {
    pub fn is_udp(self) -> bool {
        matches!(self, TestKind::Udp | TestKind::RrUdp)
    }

    pub fn name(self) -> &'static str {
        match self {
            TestKind::Udp => "udp",
            TestKind::Tcp => "tcp",
            TestKind::RrUdp => "rr-udp",
            TestKind::RrTcp => "rr-tcp",
        }
    }
}

/// A test as the client asks for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestSpec {
    pub kind: TestKind,
    pub flows: u32,
    pub duration_ms: u64,
    /// UDP payload or TCP message size, bytes.
    pub payload_bytes: u32,
    /// The packet (or transaction) rate the client will send at most; `None`: unpaced.
    pub rate_pps: Option<u64>,
    /// The bit rate the client will send at most (TCP pacing); `None`: unpaced.
    pub rate_bits_per_s: Option<u64>,
    /// The run id in the client's datagram headers: datagrams of any other run are strays.
    pub run_id: u16,
    /// The far end's sampling interval, ms.
    pub sample_ms: u32,
    /// UDP trains: read with UDP GRO (`--gro`). Left out when false, so a request without it
    /// is what it always was.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gro: bool,
    /// TCP streams: how the far end sizes each stream's receive buffer (`--rcvbuf`). Absent:
    /// its own choice, as for a request without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_rcvbuf: Option<TcpRcvbuf>,
    /// TCP streams: the far end's reader wakes at every arrival (`--sink-wakes each`), not in
    /// batches. Left out when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tcp_wake_each: bool,
}

/// A TCP stream's receive buffer as the client asks the far end to size it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum TcpRcvbuf {
    /// The far kernel's autotuning (its net.ipv4.tcp_rmem).
    Kernel,
    /// This many bytes, autotuning off (the far kernel caps it at its net.core.rmem_max).
    Bytes(u64),
}

/// The server's answer to a request for UDP GRO.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum GroAnswer {
    /// The data socket reads with UDP_GRO.
    On,
    /// The server's kernel refused UDP_GRO: the data socket reads one datagram per message.
    Refused { reason: String },
}

/// The server's yes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grant {
    pub test_id: u64,
    /// Where the data goes: this port on the address the control connection reached.
    pub data_port: u16,
    /// The limits the server enforces on this test.
    pub limits: Limits,
    /// HMAC-SHA256(key, both nonces, test id and port): the server knows the key too.
    pub mac: Option<String>,
    /// The answer to a request for UDP GRO; absent when none was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gro: Option<GroAnswer>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{decode, encode, fit_reply, hex, Decoded, MIN_HELLO_FRAME, NONCE_LEN, PROTO};

    fn spec() -> TestSpec {
        TestSpec {
            kind: TestKind::Udp,
            flows: 1,
            duration_ms: 5000,
            payload_bytes: 18,
            rate_pps: None,
            rate_bits_per_s: None,
            run_id: 7,
            sample_ms: 1000,
            gro: false,
            tcp_rcvbuf: None,
            tcp_wake_each: false,
        }
    }

    #[test]
    fn messages_round_trip() {
        for m in [
            ClientMsg::Hello {
                proto: PROTO,
                netceil: "0.1.0".into(),
                nonce: hex(&[1; NONCE_LEN]),
                pad: String::new(),
            },
            ClientMsg::Request {
                test: spec(),
                mac: Some("00".into()),
            },
            ClientMsg::Done {},
        ] {
            let b = encode(&m).unwrap();
            match decode::<ClientMsg>(&b, 1 << 20).unwrap() {
                Decoded::Frame { msg, .. } => assert_eq!(msg, m),
                d => panic!("{d:?}"),
            }
        }
        let g = ServerMsg::Grant(Grant {
            test_id: 3,
            data_port: 40000,
            limits: Limits::default(),
            mac: None,
            gro: None,
        });
        let b = encode(&g).unwrap();
        assert!(matches!(
            decode::<ServerMsg>(&b, 1 << 20).unwrap(),
            Decoded::Frame { msg, .. } if msg == g
        ));
    }

    #[test]
    fn a_challenge_is_shorter_than_the_smallest_hello_answered() {
        // The longest version string a build could have still leaves room.
        let ch = ServerMsg::Challenge {
            proto: u32::MAX,
            netceil: "99.99.99-rc.99+abcdef0".into(),
            nonce: hex(&[0xFF; NONCE_LEN]),
            key_required: false,
        };
        assert!(fit_reply(ch, MIN_HELLO_FRAME).is_some());
    }

    #[test]
    fn unknown_fields_and_kinds_are_refused() {
        let mut v = serde_json::to_value(spec()).unwrap();
        v["extra"] = 1.into();
        assert!(serde_json::from_value::<TestSpec>(v).is_err());
        let mut v = serde_json::to_value(spec()).unwrap();
        v["kind"] = "sctp".into();
        assert!(serde_json::from_value::<TestSpec>(v).is_err());
        let mut v = serde_json::to_value(spec()).unwrap();
        v["run_id"] = 70000.into();
        assert!(
            serde_json::from_value::<TestSpec>(v).is_err(),
            "u16 overflow"
        );
    }
}
