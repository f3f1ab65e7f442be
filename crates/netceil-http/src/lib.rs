//! A bounded HTTP/1.1 server for netceil's small GET endpoints (the metrics exposition).
//!
//! Whatever one client does — pipelining thousands of requests without reading the answers,
//! sending a header line of hundreds of megabytes, opening a thousand idle connections — it
//! holds at most one buffer of a few kilobytes per connection, a bounded number of
//! connections, for a bounded time, on one thread; and the other clients are answered
//! meanwhile. [`parse_request`] is the request parser alone, a pure function over bytes with
//! explicit limits (fuzzed by `fuzz/fuzz_targets/metrics_request.rs`); [`Server`] is the event
//! loop; [`RateLimitedLog`] keeps the log of misbehaving clients short.
//!
//! ```text
//! let mut server = Server::from_std(std::net::TcpListener::bind(addr)?, ServerLimits::default())?;
//! let wake = server.waker();                      // to interrupt a turn from another thread
//! loop {
//!     server.turn(Duration::from_secs(1), &mut |req| Response::text(200, "hi\n"), &mut |e| eprintln!("{e}"))?;
//! }
//! ```

mod log;
mod request;
mod server;

pub use log::RateLimitedLog;
pub use request::{parse_request, Method, Parsed, Request, RequestError, RequestLimits, Version};
pub use server::{Event, Response, Server, ServerLimits, Wake};
