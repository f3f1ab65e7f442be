//! netceil's load engine: paced UDP trains, many-flow TCP, request/response.
//!
//! Libraries never print: progress goes to a caller-supplied callback, results come back as
//! values, and errors are [`LoadError`] variants that carry what failed and where.

pub mod buf;
pub mod clock;
mod error;
pub mod header;
pub mod pacing;
pub mod rr;
pub mod tcp;
pub mod tcpinfo;
pub mod threads;
pub mod udp;

pub use error::LoadError;
