//! The process scan's `/proc/PID/stat` files are kept open between scans, and closed when the
//! process has gone. Alone in its test binary: it counts this process's open descriptors.

use std::process::{Command, Stdio};

use netceil_probe::{ProcFs, Source};

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, Iterator::count)
}

#[test]
fn stat_files_stay_open_while_their_process_lives_and_close_after() {
    if !std::path::Path::new("/proc/self/stat").exists() {
        eprintln!("skipped: no /proc here");
        return;
    }
    let mut child = Command::new("sleep")
        .arg("30")
        .stdin(Stdio::null())
        .spawn()
        .expect("sleep");
    let pid = child.id();
    let path = format!("/proc/{pid}/stat");
    let procfs = ProcFs::new();
    let before = open_fds();
    let first = procfs.read(&path).expect("the child's stat");
    assert!(first.starts_with(&format!("{pid} (sleep)")), "{first}");
    assert_eq!(open_fds(), before + 1, "the stat file is kept open");
    // Read again through the kept descriptor: fresh text, no new descriptor.
    assert!(procfs.read(&path).is_ok());
    assert_eq!(open_fds(), before + 1);
    // A scan that still lists it keeps it; one that does not closes it.
    procfs.processes_seen(&[1, pid]);
    assert_eq!(open_fds(), before + 1);
    procfs.processes_seen(&[1]);
    assert_eq!(
        open_fds(),
        before,
        "a process no scan lists has its file closed"
    );

    // A process that ends under a kept descriptor: the read fails (no stale text), and the
    // descriptor is closed.
    assert!(procfs.read(&path).is_ok());
    assert_eq!(open_fds(), before + 1);
    child.kill().expect("kill the child by its pid");
    child.wait().expect("reap the child");
    assert!(procfs.read(&path).is_err(), "an ended process has no stat");
    assert_eq!(open_fds(), before);
}
