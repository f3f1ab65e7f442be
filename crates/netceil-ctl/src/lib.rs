//! netceil's control protocol: how `netceil run … --to HOST:PORT` asks a `netceil serve` for a
//! test, and how the server answers.
//!
//! # The exchange
//! One TCP connection per test, each message a frame (a 4-byte big-endian length, then that many
//! bytes of JSON):
//!
//! 1. client → `hello` (protocol number, netceil version, a fresh 16-byte nonce, padding);
//! 2. server → `challenge` (its protocol, version, its own nonce, whether a key is needed), or
//!    `refused`;
//! 3. client → `request` (the test, and an HMAC-SHA256 over both nonces and the test, keyed by
//!    the shared secret, so the key itself never crosses the wire);
//! 4. server → `grant` (test id, data port, the limits that apply, and the server's own HMAC so
//!    the client knows it reached the keyed server), or `refused`;
//! 5. the client sends its load to the data port, then → `done`;
//! 6. server → `report` (the far end's counts, kernel deltas, CPU per core and series), and both
//!    close.
//!
//! # Built against the control-protocol bugs of other tools
//! - Every frame's length is checked against a bound before a byte of its body is buffered:
//!   [`MAX_CLIENT_FRAME`] for what a server reads, [`MAX_SERVER_FRAME`] for what a client reads.
//! - Messages are typed (serde, unknown fields refused); integers that do not fit their type
//!   are errors, never wrapped; every value is range-checked by [`Limits::check`] before use.
//! - Decoding is a pure function of the bytes ([`decode`]), fuzzed by `fuzz/` and by a
//!   property test; nothing in it panics.
//! - Every read has a deadline ([`read_frame`]); the server drops a client that is silent past it.
//! - Before authentication, no answer is longer than the message that caused it
//!   ([`fit_reply`]), so the server cannot be used to amplify traffic.
//! - Handshake slots are shared fairly ([`Slots`]): one host holds a bounded share, and the
//!   newest connection always gets a slot, so a flood cannot lock keyed clients out; what
//!   strangers do is logged with their host, in bounded volume ([`LogLimiter`]).

mod admission;
mod auth;
mod frame;
mod limits;
mod loglimit;
mod msg;

pub use admission::{Admission, Displaced, Evicted, Host, Slots, MAX_HANDSHAKES_PER_HOST};
pub use auth::{fresh_nonce, hex, unhex, Key, KeyError, NONCE_LEN};
pub use frame::{decode, encode, read_frame, write_frame, Decoded, FrameError};
pub use limits::{Limits, Refusal};
pub use loglimit::{LogBounds, LogLimiter, Summary};
pub use msg::{ClientMsg, Grant, GroAnswer, ServerMsg, TcpRcvbuf, TestKind, TestSpec};

/// Labels of the two MACs, so neither can stand for the other.
pub const MAC_REQUEST: &str = "netceil request";
pub const MAC_GRANT: &str = "netceil grant";
/// The control protocol's number. A client and server that differ refuse each other with a
/// message that says which versions met.
pub const PROTO: u32 = 1;

/// Largest frame a server accepts from a client, bytes (length prefix excluded).
pub const MAX_CLIENT_FRAME: usize = 4096;
/// Largest frame a client accepts from a server: a report with a long series.
pub const MAX_SERVER_FRAME: usize = 16 << 20;
/// The smallest `hello` a server answers, bytes of frame: the client pads its hello to at
/// least this, so the challenge (always shorter, see the tests) never amplifies.
pub const MIN_HELLO_FRAME: usize = 256;

/// Shortens an answer to an unauthenticated message so that it is no longer than `budget` bytes
/// on the wire (frame included): a `refused` reason is cut; anything else that does not fit
/// becomes `None` (the server then closes without answering).
pub fn fit_reply(msg: ServerMsg, budget: usize) -> Option<Vec<u8>> {
    let bytes = encode(&msg).ok()?;
    if bytes.len() <= budget {
        return Some(bytes);
    }
    let ServerMsg::Refused { proto, reason } = msg else {
        return None;
    };
    // Cut the reason on a character boundary until the frame fits.
    let mut cut = reason.len().min(budget);
    loop {
        while cut > 0 && !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        let m = ServerMsg::Refused {
            proto,
            reason: reason[..cut].to_string(),
        };
        let bytes = encode(&m).ok()?;
        if bytes.len() <= budget {
            return Some(bytes);
        }
        if cut == 0 {
            return None;
        }
        cut -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_cut_to_the_budget_and_never_exceed_it() {
        let long = ServerMsg::Refused {
            proto: PROTO,
            reason: "é".repeat(500),
        };
        for budget in [0, 10, 40, 60, 100, 1000, 5000] {
            match fit_reply(long.clone(), budget) {
                Some(b) => {
                    assert!(b.len() <= budget, "{} > {budget}", b.len());
                    assert!(matches!(
                        decode::<ServerMsg>(&b, 1 << 20),
                        Ok(Decoded::Frame { .. })
                    ));
                }
                None => assert!(budget < 48, "a refusal fits in {budget} bytes"),
            }
        }
        // A challenge is not cut: it goes whole or not at all.
        let ch = ServerMsg::Challenge {
            proto: PROTO,
            netceil: "0.1.0".into(),
            nonce: hex(&[0u8; NONCE_LEN]),
            key_required: true,
        };
        assert!(fit_reply(ch.clone(), 20).is_none());
        assert!(fit_reply(ch, MIN_HELLO_FRAME).is_some());
    }
}
