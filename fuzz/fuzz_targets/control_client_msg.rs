//! What a `netceil serve` parses from anyone who connects: frames of client messages, then the
//! checks a request goes through. Nothing here may panic, hang or allocate without bound.
#![no_main]
use libfuzzer_sys::fuzz_target;
use netceil_ctl::{decode, ClientMsg, Decoded, Limits, MAX_CLIENT_FRAME};

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    // A connection's bytes may hold several frames back to back.
    while let Ok(Decoded::Frame { msg, consumed }) = decode::<ClientMsg>(rest, MAX_CLIENT_FRAME) {
        if let ClientMsg::Request { test, mac } = &msg {
            let limits = Limits::default();
            let _ = limits.check(test);
            let _ = limits.byte_budget(test);
            let _ = serde_json::to_vec(test);
            if let Some(m) = mac {
                let _ = netceil_ctl::unhex(m);
            }
        }
        rest = &rest[consumed..];
    }
});
