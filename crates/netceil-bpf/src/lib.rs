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
//! which is committed; `bpf/build.sh` rebuilds it (clang, libbpf-dev). build.sh compiles the
//! SHA-256 of the source into the object itself (section [`SOURCE_SHA256_SECTION`]), and a test
//! reads it back out of the committed object and compares it with the hash of the committed
//! source, so a stale object cannot go unnoticed (clang's bytes differ between versions, so the
//! object is not compared with a fresh build). The object is loaded with aya, a pure-Rust
//! loader: building netceil needs neither clang nor libelf nor zlib. libbpf-rs would need
//! libelf and zlib at build time, and its skeletons clang as well.
//!
//! # Safety for the machine
//!
//! Every map is bounded and counts what it could not hold (reported as a note on the run,
//! never silent). Nothing is pinned: the programs and maps live as long as the [`Probes`]
//! value, and the kernel frees them when the process exits, however it exits.

pub mod duty;
pub mod ksyms;
pub mod merge;
#[cfg(target_os = "linux")]
mod probes;

#[cfg(target_os = "linux")]
pub use probes::{parse_probes, Config, Probe, ProbeError, Probes, SOFTIRQ_TIME_EVERY};

/// The ELF section of `bpf/probes.bpf.o` that holds the SHA-256 (64 hex digits and a NUL) of
/// the `probes.bpf.c` it was compiled from; build.sh passes it to clang. The loader ignores it.
pub const SOURCE_SHA256_SECTION: &str = ".netceil.source_sha256";

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use object::{Object, ObjectSection};
    use sha2::{Digest, Sha256};

    /// The source hash compiled into an object, or why it cannot be read.
    fn compiled_source_sha256(elf: &[u8]) -> Result<String, String> {
        let file = object::File::parse(elf).map_err(|e| format!("not an ELF object: {e}"))?;
        let section = file
            .section_by_name(super::SOURCE_SHA256_SECTION)
            .ok_or_else(|| format!("no section {}", super::SOURCE_SHA256_SECTION))?;
        let data = section.data().map_err(|e| e.to_string())?;
        let text = data.strip_suffix(&[0]).unwrap_or(data);
        String::from_utf8(text.to_vec()).map_err(|_| format!("not text: {data:?}"))
    }

    #[test]
    fn the_loaded_object_was_built_from_the_committed_source() {
        let src = include_bytes!("../bpf/probes.bpf.c");
        let hash = format!("{:x}", Sha256::digest(src));
        let compiled = compiled_source_sha256(crate::probes::OBJECT).unwrap_or_else(|e| {
            panic!("bpf/probes.bpf.o: {e}: run crates/netceil-bpf/bpf/build.sh")
        });
        assert_eq!(
            compiled, hash,
            "bpf/probes.bpf.o was built from another bpf/probes.bpf.c than the committed one \
             (the hash compiled into the object differs from the source's): run \
             crates/netceil-bpf/bpf/build.sh"
        );
    }
}
