//! Helpers shared by the load engine's integration tests.

/// True when the tests run with an effective uid of 0 (the second field of `Uid:`), so that
/// privileged socket options such as SO_RCVBUFFORCE are available.
pub fn euid_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        .unwrap_or(false)
}
