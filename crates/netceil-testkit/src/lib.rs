//! What netceil's tests share: one way to skip.
//!
//! A test that needs root or a system tool asks [`needs_root`] and [`needs_tool`] why it
//! cannot run here, and hands the answer to [`skip`]. On a developer's machine a skip prints
//! `skipped: WHY` and the test returns. Where [`REQUIRE`] is set (CI sets it: CI runs as root
//! and `scripts/test.sh` installs every tool) a skip is a failure instead, so a root-only test
//! cannot pass there by not running.
//!
//! Some reasons are facts of the machine no CI setting changes (no IPv6 loopback, one CPU):
//! those go to [`skip_on`], which always skips.
//!
//! ```ignore
//! let why = needs_root("to create network namespaces").or_else(|| needs_tool("ip", "-V", "iproute2"));
//! if skip(why) {
//!     return;
//! }
//! ```

use std::process::{Command, Stdio};

/// The environment variable that turns [`skip`] into a failure (any value but `0` or empty).
pub const REQUIRE: &str = "NETCEIL_TEST_REQUIRE_ALL";

/// Whether skips are failures here.
pub fn required() -> bool {
    std::env::var(REQUIRE).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Skips (prints why and returns true) when there is a reason; with [`REQUIRE`] set, panics
/// with the reason instead.
#[track_caller]
pub fn skip(reason: Option<String>) -> bool {
    let Some(why) = reason else {
        return false;
    };
    if required() {
        panic!("this test would be skipped ({why}), but {REQUIRE} is set: here it must run");
    }
    eprintln!("skipped: {why}");
    true
}

/// Skips when there is a reason that is a fact of the machine (no IPv6 loopback, one CPU),
/// whatever [`REQUIRE`] says.
pub fn skip_on(reason: Option<String>) -> bool {
    match reason {
        Some(why) => {
            eprintln!("skipped: {why}");
            true
        }
        None => false,
    }
}

/// Whether this process runs with effective uid 0.
pub fn is_root() -> bool {
    // The effective uid is the second field of /proc/self/status's Uid line.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// Why a test that needs root cannot run here (`what` says what root is for), or `None`.
pub fn needs_root(what: &str) -> Option<String> {
    (!is_root()).then(|| format!("needs root {what}"))
}

/// Why a test that runs `tool` cannot run here, or `None`: `tool arg` (a version flag) is
/// run to find it; `package` is the Debian package that has it.
pub fn needs_tool(tool: &str, arg: &str, package: &str) -> Option<String> {
    let found = Command::new(tool)
        .arg(arg)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    (!found).then(|| format!("`{tool}` is not installed (apt-get install {package})"))
}

/// The first reason among several, or `None` when there is none.
pub fn first(reasons: impl IntoIterator<Item = Option<String>>) -> Option<String> {
    reasons.into_iter().flatten().next()
}

/// The processes whose environment holds `var` exactly (`NAME=value`): how a test finds what
/// it started, whatever those processes started in turn, to check that none is left.
pub fn pids_with_env(var: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .expect("reading /proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/environ"))
                .map(|env| env.split(|b| *b == 0).any(|v| v == var.as_bytes()))
                .unwrap_or(false)
        })
        .collect()
}

/// Every entry of `dir` with its bytes (a directory's as the list of its own entries):
/// compare two of these to show that nothing in `dir` was written, made or removed.
pub fn files_in(dir: &std::path::Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| {
            let p = e.expect("a directory entry").path();
            let bytes = if p.is_dir() {
                format!("{:?}", files_in(&p)).into_bytes()
            } else {
                std::fs::read(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
            };
            (p, bytes)
        })
        .collect()
}

/// One test at a time that changes what every process on the machine sees (a sysctl, a /sys
/// knob), while it is held: within this test binary, and across every other test run here.
/// Two `cargo test` runs at once (two worktrees) would otherwise each read the other's value
/// as the original and restore it: that left net.core.netdev_budget at 155 once.
pub struct MachineLock {
    _guard: std::sync::MutexGuard<'static, ()>,
    _file: std::fs::File,
}

/// Waits for, then holds, the machine (see [`MachineLock`]); released when dropped.
pub fn machine_lock() -> MachineLock {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let guard = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let path = std::env::temp_dir().join("netceil-tests-machine.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    file.lock()
        .unwrap_or_else(|e| panic!("locking {}: {e}", path.display()));
    MachineLock {
        _guard: guard,
        _file: file,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_reason_never_skips() {
        assert!(!skip(None));
        assert!(!skip_on(None));
    }

    #[test]
    fn a_missing_tool_is_named_with_its_package() {
        let why = needs_tool("netceil-no-such-tool", "-V", "nothing").unwrap();
        assert!(why.contains("netceil-no-such-tool") && why.contains("apt-get install nothing"));
        assert!(needs_tool("sh", "-c", "dash").is_none());
    }

    #[test]
    fn a_child_is_found_by_its_mark_and_only_while_it_runs() {
        let mark = format!("NETCEIL_TESTKIT_MARK={}", std::process::id());
        let (name, value) = mark.split_once('=').unwrap();
        let mut child = Command::new("sleep")
            .arg("5")
            .env(name, value)
            .spawn()
            .unwrap();
        // Seen once the child's environment is readable in /proc (at once, on a quiet machine).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        let mut found = pids_with_env(&mark);
        while found.is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
            found = pids_with_env(&mark);
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(found, vec![child.id()]);
        assert!(pids_with_env(&mark).is_empty());
    }

    #[test]
    fn the_first_reason_wins() {
        assert_eq!(
            first([None, Some("a".into()), Some("b".into())]),
            Some("a".into())
        );
        assert_eq!(first([None, None]), None);
    }

    /// Under `REQUIRE` a reason is a failure, not a skip (run in a child so the variable does
    /// not leak into the other tests).
    #[test]
    fn required_skips_fail() {
        if std::env::var_os("NETCEIL_TESTKIT_CHILD").is_some() {
            skip(Some("a reason".into()));
            return;
        }
        let me = std::env::current_exe().unwrap();
        let out = Command::new(me)
            .args(["--exact", "tests::required_skips_fail", "--nocapture"])
            .env("NETCEIL_TESTKIT_CHILD", "1")
            .env(REQUIRE, "1")
            .output()
            .unwrap();
        assert!(!out.status.success(), "a required skip passed");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("must run")
                || String::from_utf8_lossy(&out.stderr).contains("must run")
        );
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "tests::required_skips_fail"])
            .env("NETCEIL_TESTKIT_CHILD", "1")
            .env_remove(REQUIRE)
            .output()
            .unwrap();
        assert!(out.status.success(), "an optional skip failed");
    }
}
