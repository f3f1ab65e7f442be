//! netceil's kernel probes: lock contention, exact softirq time, NAPI polls and off-CPU time,
//! from BTF-enabled tracepoints (`tp_btf`), read into the same Run as every other source.
//!
//! # Why tracepoints, and why aya
//!
//! On lockdown kernels (the BPF LSM in integrity mode) kprobes and fentry/fexit are refused,
//! while BTF tracepoints load; every probe here is a tracepoint, and the kernel's own types are
//! reached through CO-RE relocations against /sys/kernel/btf/vmlinux, so one object runs on
//! any kernel with BTF.
//!
//! The programs are C (`bpf/probes.bpf.c`), compiled ahead of time into `bpf/probes.bpf.o`,
//! which is committed; `bpf/build.sh` rebuilds it (clang, libbpf-dev), and
//! `bpf/probes.bpf.o.src-sha256` records the hash of the source the object was built from, which
//! a test checks, so a stale object cannot go unnoticed (clang's bytes differ between
//! versions, so the object itself is not compared). The object is loaded with aya, a pure-Rust
//! loader: building netceil needs neither clang nor libelf nor zlib. libbpf-rs would need
//! libelf and zlib at build time, and its skeletons clang as well.
//!
//! # Safety for the machine
//!
//! Every map is bounded and counts what it could not hold (reported as a note on the run,
//! never silent). Nothing is pinned: the programs and maps live as long as the [`Probes`]
//! value, and the kernel frees them when the process exits, however it exits.

pub mod ksyms;
pub mod merge;
#[cfg(target_os = "linux")]
mod probes;

#[cfg(target_os = "linux")]
pub use probes::{parse_probes, Config, Probe, ProbeError, Probes};

/// The SHA-256 of the C source the committed object was built from, as recorded by build.sh.
pub const OBJECT_SOURCE_SHA256: &str = include_str!("../bpf/probes.bpf.o.src-sha256");

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};

    #[test]
    fn the_committed_object_was_built_from_the_committed_source() {
        let src = include_bytes!("../bpf/probes.bpf.c");
        let hash = format!("{:x}", Sha256::digest(src));
        assert_eq!(
            super::OBJECT_SOURCE_SHA256.trim(),
            hash,
            "bpf/probes.bpf.o is stale against bpf/probes.bpf.c: run crates/netceil-bpf/bpf/build.sh"
        );
    }
}
