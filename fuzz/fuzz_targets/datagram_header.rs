//! Every datagram a receiver reads goes through these parsers first.
#![no_main]
use libfuzzer_sys::fuzz_target;
use netceil_load::header::{Fin, FinReport, Header, HEADER_LEN};

fuzz_target!(|data: &[u8]| {
    if let Some(h) = Header::read(data) {
        let body = &data[HEADER_LEN.min(data.len())..];
        let _ = (h, Fin::read(body), FinReport::read(body));
    }
});
