//! `--probe`, live, as root: each probe attaches, sees the events a workload must produce
//! (a contended pipe for locks; loopback UDP for softirq, napi and offcpu), and is gone
//! afterwards (no program or map of ours left, by bpftool); an unprivileged user gets the
//! clear message, not a panic.
//!
//! Without root each test says why and passes without running.

use std::process::{Command, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_netceil");

// The probe tests load the machine and count kernel programs: one at a time.
// (netceil_testkit::machine_lock, across test processes too.)

/// The names our programs have in the kernel (bpftool shows the first 15 characters).
const OUR_PROGRAMS: [&str; 9] = [
    "lock_begin",
    "lock_end",
    "softirq_entry",
    "softirq_exit",
    "napi_poll",
    "sched_switch",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_fork",
];
const OUR_MAPS: [&str; 4] = ["lock_stat", "softirq_time", "thread_stat", "napi_stat"];

fn skip_reason() -> Option<String> {
    netceil_testkit::needs_root("to load eBPF probes").or_else(|| {
        (!std::path::Path::new("/sys/kernel/btf/vmlinux").exists())
            .then(|| "this kernel has no BTF (/sys/kernel/btf/vmlinux)".into())
    })
}

/// How many of our programs and maps the kernel holds now (bpftool).
fn ours_loaded() -> Option<usize> {
    let mut n = 0;
    for what in ["prog", "map"] {
        let o = Command::new("bpftool")
            .args([what, "show", "--json"])
            .output()
            .ok()?;
        if !o.status.success() {
            return None;
        }
        let v: Value = serde_json::from_slice(&o.stdout).ok()?;
        n += v
            .as_array()?
            .iter()
            .filter(|p| {
                let name = p["name"].as_str().unwrap_or("");
                OUR_PROGRAMS.contains(&name) || OUR_MAPS.contains(&name)
            })
            .count();
    }
    Some(n)
}

/// Runs netceil with a private store and returns (exit code, the run as JSON, stderr).
fn netceil(args: &[&str]) -> (i32, Option<Value>, String) {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(BIN)
        .args(args)
        .env("NETCEIL_DB", dir.path().join("runs.db"))
        .stdin(Stdio::null())
        .output()
        .expect("netceil runs");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let run = serde_json::from_slice(&o.stdout).ok();
    (o.status.code().unwrap_or(-1), run, stderr)
}

fn metrics<'a>(run: &'a Value, name: &str) -> Vec<&'a Value> {
    run["series"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"] == name)
        .collect()
}

fn max_value(m: &Value) -> f64 {
    m["values"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_f64)
        .fold(0.0, f64::max)
}

/// Runs `check` with the probes' leftovers counted before and after. The kernel frees a
/// program or map after an RCU grace period once its last descriptor closes, so "after" is
/// given up to 5 s to come back to "before".
fn leaves_nothing(check: impl FnOnce()) {
    let before = ours_loaded();
    check();
    let Some(b) = before else {
        eprintln!(
            "bpftool is not installed: the leftover check was skipped (apt-get install bpftool)"
        );
        return;
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let a = ours_loaded().expect("bpftool ran before");
        if a == b {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} programs or maps of ours still loaded 5 s after netceil ended",
            a - b
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn the_locks_probe_catches_a_contended_pipe_in_someone_elses_program() {
    if netceil_testkit::skip(skip_reason()) {
        return;
    }
    let _g = netceil_testkit::machine_lock();
    leaves_nothing(|| {
        // Four writers on one pipe: each write takes the pipe's mutex. Enough of them to
        // last a few one-second rows even on a quiet machine.
        let (code, run, err) = netceil(&[
            "watch",
            "--probe",
            "locks",
            "--json",
            "-q",
            "--",
            "sh",
            "-c",
            "for i in 1 2 3 4; do dd if=/dev/zero bs=4096 count=400000 status=none & done | dd of=/dev/null bs=4096 status=none",
        ]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("probes attached: locks"), "{err}");
        let run = run.expect("JSON run");
        let locks = run["locks"].as_array().expect("a lock table");
        let mutex_wait: f64 = locks
            .iter()
            .filter(|l| l["kind"] == "mutex")
            .map(|l| l["wait_total_s"].as_f64().unwrap())
            .sum();
        assert!(mutex_wait > 0.0, "no mutex wait in {locks:#?}");
        // The pipe's lock leads the sleeping locks, named by the code that takes it. (The probe
        // is machine-wide: on a shared VM another program's spinlock has been seen waiting
        // longer in a handful of contentions, the vCPU holding it descheduled.)
        let top = locks
            .iter()
            .find(|l| l["kind"] == "mutex")
            .expect("a mutex in the lock table");
        assert!(
            top["name"].as_str().unwrap().contains("pipe"),
            "top lock {top:#?}"
        );
        assert!(!top["stack"].as_array().unwrap().is_empty(), "{top:#?}");
        let findings = run["findings"].as_array().unwrap();
        assert!(
            findings.iter().any(|f| f["cause"] == "lock_contention"),
            "{findings:#?}"
        );
        assert!(!metrics(&run, "lock_wait_pct").is_empty());
    });
}

#[test]
fn softirq_napi_and_offcpu_see_loopback_udp() {
    if netceil_testkit::skip(skip_reason()) {
        return;
    }
    let _g = netceil_testkit::machine_lock();
    leaves_nothing(|| {
        let (code, run, err) = netceil(&[
            "run",
            "udp",
            "--size",
            "64",
            "--duration",
            "2",
            "--probe",
            "softirq,napi,offcpu",
            "--json",
            "-q",
        ]);
        assert_eq!(code, 0, "{err}");
        let run = run.expect("JSON run");
        assert_eq!(run["meta"]["labels"]["probes"], "softirq,napi,offcpu");
        // Receive processing on loopback is NET_RX softirq time, on some CPU.
        let net_rx: f64 = metrics(&run, "softirq_exact_pct")
            .iter()
            .filter(|m| m["labels"]["vec"] == "net_rx")
            .map(|m| max_value(m))
            .fold(0.0, f64::max);
        assert!(net_rx > 1.0, "NET_RX softirq {net_rx} %");
        // Loopback delivers through the per-CPU backlog's NAPI.
        let polled: f64 = metrics(&run, "napi_pps")
            .iter()
            .map(|m| max_value(m))
            .fold(0.0, f64::max);
        assert!(polled > 1000.0, "NAPI packets/s {polled}");
        // The unpaced sender is on its CPU nearly all the time and never blocks.
        let tx = metrics(&run, "sched_on_cpu_pct")
            .into_iter()
            .find(|m| m["labels"]["comm"] == "netceil-udp-tx0")
            .expect("the sender thread followed");
        assert!(max_value(tx) > 50.0, "{tx}");
    });
}

#[test]
fn without_privilege_the_probes_say_so() {
    if netceil_testkit::skip(skip_reason()) {
        return;
    }
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
        .args([
            "run",
            "udp",
            "--duration",
            "1",
            "--probe",
            "locks",
            "--no-store",
        ])
        .stdin(Stdio::null())
        .output();
    let Ok(o) = o else {
        netceil_testkit::skip(Some(
            "setpriv is not installed (apt-get install util-linux)".into(),
        ));
        return;
    };
    let err = String::from_utf8_lossy(&o.stderr);
    let denied = err.contains("Permission denied") && !err.contains("netceil");
    if netceil_testkit::skip_on(denied.then(|| format!("user nobody cannot execute {BIN}"))) {
        return;
    }
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("eBPF probes need root"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn an_unknown_probe_is_a_usage_error() {
    let (code, _, err) = netceil(&["run", "udp", "--probe", "locks,irqs", "--no-store"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown probe 'irqs'"), "{err}");
}

#[test]
fn a_killed_netceil_leaves_no_probe_behind() {
    if netceil_testkit::skip(skip_reason()) {
        return;
    }
    let _g = netceil_testkit::machine_lock();
    leaves_nothing(|| {
        let dir = tempfile::tempdir().unwrap();
        let err_path = dir.path().join("stderr");
        let mut child = Command::new(BIN)
            .args(["watch", "--probe", "all", "--duration", "30", "-q"])
            .env("NETCEIL_DB", dir.path().join("runs.db"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&err_path).unwrap())
            .spawn()
            .expect("netceil starts");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !std::fs::read_to_string(&err_path)
            .unwrap_or_default()
            .contains("probes attached")
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the probes did not attach: {}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        if let Some(n) = ours_loaded() {
            assert!(n >= 9, "the probes should be loaded now ({n} of ours seen)");
        }
        // SIGKILL: no destructor runs; the kernel must free what nothing pins.
        child.kill().unwrap();
        child.wait().unwrap();
    });
}
