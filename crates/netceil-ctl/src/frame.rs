//! Frames: a 4-byte big-endian length, then that many bytes of JSON.

use serde::{de::DeserializeOwned, Serialize};
use std::io::{ErrorKind, Read, Write};
use std::time::Instant;

/// Why a frame could not be read or decoded.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("a {len}-byte message is over the {max}-byte limit")]
    TooLong { len: usize, max: usize },
    #[error("an empty message")]
    Empty,
    #[error("a malformed message: {0}")]
    Malformed(String),
    #[error("no complete message within the time allowed ({got} bytes of it arrived)")]
    Timeout { got: usize },
    #[error("the connection closed {0}")]
    Closed(&'static str),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The outcome of [`decode`] on the bytes received so far.
#[derive(Debug)]
pub enum Decoded<T> {
    /// Not a whole frame yet; `need` bytes in all would complete what is known of it.
    NeedMore { need: usize },
    /// A message, and how many bytes of the buffer it took.
    Frame { msg: T, consumed: usize },
}

/// Decodes the first frame of `buf`, refusing lengths over `max` as soon as the length prefix
/// is in (before the body is buffered). Pure: the fuzz target's entry point.
pub fn decode<T: DeserializeOwned>(buf: &[u8], max: usize) -> Result<Decoded<T>, FrameError> {
    let Some(prefix) = buf.get(..4) else {
        return Ok(Decoded::NeedMore { need: 4 });
    };
    let len = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as usize;
    if len > max {
        return Err(FrameError::TooLong { len, max });
    }
    if len == 0 {
        return Err(FrameError::Empty);
    }
    let Some(body) = buf.get(4..4 + len) else {
        return Ok(Decoded::NeedMore { need: 4 + len });
    };
    let msg = serde_json::from_slice(body).map_err(|e| FrameError::Malformed(e.to_string()))?;
    Ok(Decoded::Frame {
        msg,
        consumed: 4 + len,
    })
}

/// One message as a frame.
pub fn encode<T: Serialize>(msg: &T) -> Result<Vec<u8>, FrameError> {
    let body = serde_json::to_vec(msg).map_err(|e| FrameError::Malformed(e.to_string()))?;
    let len = u32::try_from(body.len()).map_err(|_| FrameError::TooLong {
        len: body.len(),
        max: u32::MAX as usize,
    })?;
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

/// Writes one message; returns the bytes written.
pub fn write_frame<T: Serialize>(w: &mut impl Write, msg: &T) -> Result<usize, FrameError> {
    let bytes = encode(msg)?;
    w.write_all(&bytes)?;
    w.flush()?;
    Ok(bytes.len())
}

/// Reads one message from a blocking stream whose read timeout is set short (the caller's
/// job), giving up at `deadline`. Reads only as many bytes as the frame needs, so what follows
/// it stays in the stream. Returns the message and its size on the wire.
pub fn read_frame<T: DeserializeOwned>(
    r: &mut impl Read,
    max: usize,
    deadline: Instant,
) -> Result<(T, usize), FrameError> {
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let need = match decode::<T>(&buf, max)? {
            Decoded::Frame { msg, consumed } => return Ok((msg, consumed)),
            Decoded::NeedMore { need } => need,
        };
        let have = buf.len();
        buf.resize(need, 0);
        let mut got = have;
        while got < need {
            if Instant::now() >= deadline {
                return Err(FrameError::Timeout { got });
            }
            match r.read(&mut buf[got..need]) {
                Ok(0) => {
                    return Err(FrameError::Closed(if got == 0 {
                        "before a message"
                    } else {
                        "in the middle of a message"
                    }))
                }
                Ok(k) => got += k,
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClientMsg, ServerMsg, MAX_CLIENT_FRAME};
    use proptest::prelude::*;
    use std::time::Duration;

    #[test]
    fn round_trip_and_partial_frames() {
        let m = ClientMsg::Done {};
        let b = encode(&m).unwrap();
        for cut in 0..b.len() {
            assert!(matches!(
                decode::<ClientMsg>(&b[..cut], MAX_CLIENT_FRAME),
                Ok(Decoded::NeedMore { .. })
            ));
        }
        match decode::<ClientMsg>(&b, MAX_CLIENT_FRAME).unwrap() {
            Decoded::Frame { msg, consumed } => {
                assert_eq!(msg, m);
                assert_eq!(consumed, b.len());
            }
            d => panic!("{d:?}"),
        }
    }

    #[test]
    fn malformed_frames_are_errors() {
        // A length over the limit is refused from the prefix alone.
        let huge = [0xFF, 0xFF, 0xFF, 0xFF];
        assert!(matches!(
            decode::<ClientMsg>(&huge, MAX_CLIENT_FRAME),
            Err(FrameError::TooLong { .. })
        ));
        assert!(matches!(
            decode::<ClientMsg>(&[0, 0, 0, 0], MAX_CLIENT_FRAME),
            Err(FrameError::Empty)
        ));
        for body in [
            &b"{"[..],
            b"null",
            b"[]",
            b"{\"type\":\"done\",\"x\":1}",
            b"{\"type\":\"nope\"}",
            b"{\"type\":\"hello\",\"proto\":-1,\"netceil\":\"x\",\"nonce\":\"\",\"pad\":\"\"}",
            b"{\"type\":\"hello\",\"proto\":99999999999999999999999,\"netceil\":\"x\",\"nonce\":\"\",\"pad\":\"\"}",
            b"\xff\xfe",
        ] {
            let mut f = (body.len() as u32).to_be_bytes().to_vec();
            f.extend_from_slice(body);
            assert!(
                matches!(
                    decode::<ClientMsg>(&f, MAX_CLIENT_FRAME),
                    Err(FrameError::Malformed(_))
                ),
                "{:?}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn read_frame_times_out_on_a_silent_peer_and_stops_at_the_frame() {
        // A reader that never has anything: the deadline ends the wait.
        struct Silent;
        impl Read for Silent {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                std::thread::sleep(Duration::from_millis(5));
                Err(ErrorKind::WouldBlock.into())
            }
        }
        let t = Instant::now();
        let r =
            read_frame::<ClientMsg>(&mut Silent, MAX_CLIENT_FRAME, t + Duration::from_millis(50));
        assert!(matches!(r, Err(FrameError::Timeout { got: 0 })));
        // Two frames back to back: the first read leaves the second in the stream.
        let mut bytes = encode(&ClientMsg::Done {}).unwrap();
        bytes.extend(
            encode(&ServerMsg::Refused {
                proto: 1,
                reason: "x".into(),
            })
            .unwrap(),
        );
        let mut cur = std::io::Cursor::new(bytes);
        let far = Instant::now() + Duration::from_secs(5);
        let (a, _) = read_frame::<ClientMsg>(&mut cur, MAX_CLIENT_FRAME, far).unwrap();
        assert_eq!(a, ClientMsg::Done {});
        let (b, _) = read_frame::<ServerMsg>(&mut cur, MAX_CLIENT_FRAME, far).unwrap();
        assert!(matches!(b, ServerMsg::Refused { .. }));
        assert!(matches!(
            read_frame::<ServerMsg>(&mut cur, MAX_CLIENT_FRAME, far),
            Err(FrameError::Closed("before a message"))
        ));
    }

    proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = decode::<ClientMsg>(&bytes, MAX_CLIENT_FRAME);
            let _ = decode::<ServerMsg>(&bytes, MAX_CLIENT_FRAME);
        }

        #[test]
        fn decode_never_panics_on_framed_json_like_input(body in "[{}\\[\\]\":,a-z0-9 .e+-]{0,300}") {
            let mut f = (body.len() as u32).to_be_bytes().to_vec();
            f.extend_from_slice(body.as_bytes());
            let _ = decode::<ClientMsg>(&f, MAX_CLIENT_FRAME);
        }
    }
}
