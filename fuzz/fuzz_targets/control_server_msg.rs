//! What `netceil run --to` parses from the server it reached: a hostile or broken server must
//! not crash the client, whatever its report holds.
#![no_main]
use libfuzzer_sys::fuzz_target;
use netceil_ctl::{decode, ServerMsg, MAX_SERVER_FRAME};

fuzz_target!(|data: &[u8]| {
    let _ = decode::<ServerMsg>(data, MAX_SERVER_FRAME);
});
