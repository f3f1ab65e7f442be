//! Helpers shared by the load engine's integration tests.

/// True when the tests run with an effective uid of 0 (the second field of `Uid:`), so that
/// privileged socket options such as SO_RCVBUFFORCE are available.
pub fn euid_is_root() -> bool {
    netceil_testkit::is_root()
}
