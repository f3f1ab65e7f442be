//! `ProcFs` on a copy of /proc and /sys under a temporary root, and `FakeSource`'s seams.
#![cfg(unix)]

use std::io::ErrorKind;
use std::time::Duration;

use netceil_probe::{FakeSource, ProcFs, Sampler, SamplerConfig, Source};

#[test]
fn procfs_reads_under_a_root_and_sees_new_content() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("proc/net")).unwrap();
    std::fs::create_dir_all(root.join("proc/42/task/43")).unwrap();
    std::fs::create_dir_all(root.join("sys/class/net/eth0/queues/rx-0")).unwrap();
    std::fs::write(root.join("proc/stat"), "cpu 1 2 3 4\n").unwrap();
    std::os::unix::fs::symlink(
        "../../../devices/virtio2",
        root.join("sys/class/net/eth0/device"),
    )
    .unwrap();

    let fs = ProcFs::with_root(root);
    assert_eq!(fs.root(), root);
    let mut buf = String::new();
    fs.read_into("/proc/stat", &mut buf).unwrap();
    assert_eq!(buf, "cpu 1 2 3 4\n");
    // Kept open and read again from offset 0: the new text, whatever its length.
    std::fs::write(root.join("proc/stat"), "cpu 10 20 30 40 50 60 70\n").unwrap();
    fs.read_into("/proc/stat", &mut buf).unwrap();
    assert_eq!(buf, "cpu 10 20 30 40 50 60 70\n");
    let big = "x".repeat(20_000);
    std::fs::write(root.join("proc/stat"), &big).unwrap();
    assert_eq!(fs.read("/proc/stat").unwrap().len(), 20_000);

    assert_eq!(
        fs.read("/proc/net/dev").unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        fs.read_link("/sys/class/net/eth0/device").unwrap(),
        "../../../devices/virtio2"
    );
    assert_eq!(fs.list_dir("/sys/class/net").unwrap(), ["eth0"]);
    assert_eq!(fs.list_dir("/proc/42/task").unwrap(), ["43"]);
    assert!(fs.clock_ticks_per_s() > 0);
    let t0 = fs.now();
    std::thread::sleep(Duration::from_millis(5));
    assert!(fs.now() > t0);
    #[cfg(target_os = "linux")]
    assert!(fs.thread_cpu_time().is_some());
}

#[test]
fn sampler_on_an_empty_root_reports_every_source_missing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Sampler::new(ProcFs::with_root(dir.path()), SamplerConfig::default());
    let a = s.sample();
    let b = s.sample();
    assert!(a
        .stat
        .as_ref()
        .unwrap_err()
        .to_string()
        .starts_with("/proc/stat: "));
    assert!(a.slow.snmp.is_err() && a.slow.psi_cpu.is_err());
    let row = netceil_probe::rates(&a, &b);
    assert!(row.iter().all(|(m, _, _)| m.name == "sampler_cpu_pct"));
    assert!(row.missing_reason("cpu_busy_pct").is_some());
    assert!(row.missing_reason("softirq_net_rx_per_s").is_some());
}

#[test]
fn fake_source_lists_links_errors_and_clock() {
    let fake = FakeSource::new();
    fake.set("/a/b/c", "1");
    fake.set("/a/d", "2");
    fake.set_link("/a/e", "../x");
    assert_eq!(fake.list_dir("/a").unwrap(), ["b", "d", "e"]);
    assert_eq!(fake.list_dir("/a/b").unwrap(), ["c"]);
    assert_eq!(
        fake.list_dir("/nope").unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(fake.read_link("/a/e").unwrap(), "../x");
    fake.set_error("/a/d", ErrorKind::PermissionDenied, "Permission denied");
    assert_eq!(
        fake.read("/a/d").unwrap_err().kind(),
        ErrorKind::PermissionDenied
    );
    fake.remove("/a/d");
    assert_eq!(fake.read("/a/d").unwrap_err().kind(), ErrorKind::NotFound);
    fake.remove_dir("/a");
    assert!(fake.list_dir("/a").is_err());
    let clone = fake.clone();
    clone.advance(Duration::from_millis(1500));
    assert_eq!(fake.now(), Duration::from_millis(1500));
    assert_eq!(fake.thread_cpu_time(), None);
    fake.set_clock_ticks_per_s(250);
    assert_eq!(clone.clock_ticks_per_s(), 250);
}
