//! What the metrics endpoint parses from anyone who connects: request heads, back to back as a
//! pipelining client sends them, under the endpoint's limits and under tight ones. Nothing
//! here may panic, hang or take more than the limits allow.
#![no_main]
use libfuzzer_sys::fuzz_target;
use netceil_http::{parse_request, RequestLimits};

fuzz_target!(|data: &[u8]| {
    let tight = RequestLimits {
        request_line: 32,
        header_count: 3,
        header_bytes: 64,
        total: 96,
    };
    for limits in [RequestLimits::default(), tight] {
        let mut rest = data;
        while let Ok(Some(p)) = parse_request(rest, &limits) {
            assert!(p.consumed > 0 && p.consumed <= rest.len().min(limits.total));
            assert!(p.request.headers.len() <= limits.header_count);
            rest = &rest[p.consumed..];
        }
        if let Ok(None) = parse_request(rest, &limits) {
            assert!(rest.len() <= limits.total, "waiting on more than a head's worth");
        }
    }
});
