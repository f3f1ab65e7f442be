//! Inputs that could exhaust the machine or panic it are refused as bad input (exit 2), with
//! a message naming what was wrong, after a bounded read:
//! - a key file that never ends (`/dev/zero`, `/dev/urandom`: devices say their length is 0);
//! - a log on standard input that never ends, or one line of 10 MB;
//! - a duration too long for any `Duration`, or negative, on every option that takes one;
//! - a rate above what any host sends, on every option that takes one.
//!
//! Every child is watched while it runs (its resident size from /proc, stopped by its PID
//! past [`RSS_GUARD`] or [`TIME_GUARD`]), so that a regression cannot take the machine down
//! with it. The inputs that never end are also measured exactly: one test runs them one
//! after the other and, after each, holds the peak resident size of the children this test
//! binary has reaped (`getrusage(RUSAGE_CHILDREN)`, a maximum over them all) under
//! [`PEAK_LIMIT`]. The other tests' children are refused by the argument parser and stay
//! far below it.

use std::io::{Read, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_netceil");

/// Peak resident size any child here may reach. netceil itself takes ~16 MiB; a bounded
/// read adds at most a line (1 MiB) and a buffer. Before the reads were bounded, a 50 MB
/// stream took 185 MiB and a 10 MB line 105 MiB.
const PEAK_LIMIT: u64 = 64 << 20;
/// Resident size at which the watcher stops a child.
const RSS_GUARD: u64 = 512 << 20;
/// Time after which the watcher stops a child: every refusal here is immediate.
const TIME_GUARD: Duration = Duration::from_secs(60);

/// What a finished child said.
struct Outcome {
    status: ExitStatus,
    stderr: String,
    took: Duration,
    /// The peak resident size of the children reaped so far, bytes.
    peak: u64,
}

impl Outcome {
    /// Asserts the exit code was 2 (bad input) and the message holds every `needle`.
    fn refused(&self, what: &str, needles: &[&str]) {
        assert_eq!(
            self.status.code(),
            Some(2),
            "{what}: expected exit 2 (bad input), got {:?}; stderr: {}",
            self.status,
            self.stderr
        );
        for n in needles {
            assert!(
                self.stderr.contains(n),
                "{what}: the message lacks '{n}': {}",
                self.stderr
            );
        }
        assert!(
            !self.stderr.contains("panicked"),
            "{what}: panicked: {}",
            self.stderr
        );
    }
}

/// The resident size of a process, bytes (`None` once it is gone).
fn rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The peak resident size of every reaped child of this process, bytes.
fn children_peak() -> u64 {
    use nix::sys::resource::{getrusage, UsageWho};
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    // Linux gives ru_maxrss in kilobytes.
    usage.max_rss() as u64 * 1024
}

/// Runs netceil with `args` against a store of its own, feeding `zeros` bytes of zeros on
/// standard input (then closing it) if given, and watches it as the module says.
fn netceil(args: &[&str], zeros: Option<u64>) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(args)
        .env("NETCEIL_DB", dir.path().join("runs.db"))
        .stdin(if zeros.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("netceil starts");
    let feeder = zeros.map(|n| {
        let mut stdin = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            let block = vec![0u8; 64 * 1024];
            let mut left = n;
            while left > 0 {
                let k = left.min(block.len() as u64) as usize;
                // A reader that has refused the stream closes it: stop there.
                if stdin.write_all(&block[..k]).is_err() {
                    break;
                }
                left -= k as u64;
            }
        })
    });
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        let resident = rss(child.id()).unwrap_or(0);
        if resident > RSS_GUARD || start.elapsed() > TIME_GUARD {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "netceil {args:?}: stopped after {:?} at {} MiB resident",
                start.elapsed(),
                resident >> 20
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = start.elapsed();
    if let Some(f) = feeder {
        f.join().unwrap();
    }
    Outcome {
        status,
        stderr: reader.join().unwrap(),
        took,
        peak: children_peak(),
    }
}

/// Asserts no child reaped so far went past [`PEAK_LIMIT`], and says what the peak was.
fn bounded(o: &Outcome, what: &str) {
    eprintln!(
        "{what}: peak resident size of the children so far {} KiB",
        o.peak >> 10
    );
    assert!(
        o.peak < PEAK_LIMIT,
        "{what}: a child reached {} MiB resident; stderr: {}",
        o.peak >> 20,
        o.stderr
    );
}

/// One after the other, so that the peak after each is the peak of it or one before it.
#[test]
fn inputs_that_never_end_are_refused_after_a_bounded_read() {
    for dev in ["/dev/zero", "/dev/urandom"] {
        let what = format!("serve --key-file {dev}");
        let o = netceil(&["serve", "--key-file", dev], None);
        o.refused(&what, &[dev, "over 4096 bytes"]);
        assert!(o.took < Duration::from_secs(10), "{what} took {:?}", o.took);
        bounded(&o, &what);
        // The client reads its key the same way, before it connects anywhere.
        let what = format!("run --key-file {dev}");
        let o = netceil(
            &["run", "udp", "--to", "127.0.0.1:9", "--key-file", dev],
            None,
        );
        o.refused(&what, &[dev, "over 4096 bytes"]);
        bounded(&o, &what);
    }

    // 50 MB of zeros on standard input: one line, far longer than any log's.
    let o = netceil(&["analyze", "--no-store", "-"], Some(50_000_000));
    o.refused("analyze - <zeros", &["-:1: line longer than 1 MiB"]);
    assert!(o.took < Duration::from_secs(20), "took {:?}", o.took);
    bounded(&o, "analyze - <zeros");

    // A 10 MB line after two good ones, then a file of one 10 MB line.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("vmstat.log");
    let mut text = String::from("procs -----------memory----------\n r  b   swpd   free\n");
    text.push_str(&"1".repeat(10_000_000));
    text.push('\n');
    std::fs::write(&log, &text).unwrap();
    let name = log.to_str().unwrap();
    let o = netceil(&["analyze", "--no-store", name], None);
    let at_3 = format!("{name}:3: line longer than 1 MiB");
    o.refused("a 10 MB third line", &[&at_3]);
    bounded(&o, "a 10 MB third line");
    std::fs::write(&log, "x".repeat(10_000_000)).unwrap();
    let o = netceil(&["analyze", "--no-store", name], None);
    o.refused(
        "a 10 MB file of one line",
        &[&format!("{name}:1: line longer")],
    );
    bounded(&o, "a 10 MB file of one line");
    // The input is only read.
    assert_eq!(std::fs::metadata(&log).unwrap().len(), 10_000_000);
}

/// Every option that takes a duration, as a full command line with `V` for its value.
const DURATION_OPTIONS: &[&[&str]] = &[
    &["run", "udp", "--duration", "V"],
    &["run", "udp", "--interval", "V"],
    &["run", "tcp", "--duration", "V"],
    &["run", "rr", "--duration", "V"],
    &["run", "--sample-interval", "V", "udp"],
    &[
        "run",
        "--metrics-listen",
        "127.0.0.1:0",
        "--metrics-linger",
        "V",
        "udp",
    ],
    &["search", "udp", "--trial", "V"],
    &["search", "udp", "--initial-trial", "V"],
    &["sweep", "tcp", "--step-duration", "V"],
    &["serve", "--duration", "V"],
    &["serve", "--max-duration", "V"],
    &["serve", "--step-timeout", "V"],
    &["watch", "--duration", "V"],
    &["watch", "--interval", "V"],
    &["analyze", "--interval", "V", "-"],
    &["analyze", "--window", "V", "-"],
];

fn with<'a>(template: &[&'a str], value: &'a str) -> Vec<&'a str> {
    template
        .iter()
        .map(|a| if *a == "V" { value } else { a })
        .collect()
}

#[test]
fn durations_too_long_for_any_clock_are_bad_input_not_a_panic() {
    for template in DURATION_OPTIONS {
        let args = with(template, "99999999999999999999s");
        let o = netceil(&args, None);
        o.refused(&args.join(" "), &["longer than"]);
    }
    // The range of a sweep is read with the same parser.
    let o = netceil(
        &[
            "sweep",
            "--no-store",
            "udp",
            "--interval",
            "0us..99999999999999999999s/1us",
        ],
        None,
    );
    o.refused("sweep --interval 0..huge", &["longer than 7d"]);
}

#[test]
fn negative_durations_must_be_positive() {
    for template in DURATION_OPTIONS {
        let args = with(template, "-5");
        let o = netceil(&args, None);
        o.refused(&args.join(" "), &["must be positive"]);
    }
}

#[test]
fn rates_beyond_any_host_are_refused_with_the_bound() {
    let cases: &[(&[&str], &str)] = &[
        (&["run", "udp", "--rate", "999999999999"], "above 1Gpps"),
        (&["run", "udp", "--rate", "20Tbit"], "above 10Tbit/s"),
        (&["run", "rr", "--rate", "999999999999"], "above 1Gpps"),
        (
            &["run", "tcp", "--rate-per-flow", "1e15bit"],
            "above 10Tbit/s",
        ),
        (
            &["sweep", "tcp", "--rate-per-flow", "1e15bit"],
            "above 10Tbit/s",
        ),
        (
            &["search", "udp", "--max-rate", "999999999999"],
            "above 1Gpps",
        ),
        (&["search", "udp", "--min-rate", "-5"], "greater than zero"),
        (&["serve", "--max-rate", "999999999999"], "above 1Gpps"),
        (&["serve", "--max-bits", "1e15bit"], "above 10Tbit/s"),
        (
            &["analyze", "--throughput", "1e15bit", "-"],
            "above 10Tbit/s",
        ),
        (&["analyze", "--link", "100T", "-"], "above 10Tbit/s"),
    ];
    for (args, needle) in cases {
        let o = netceil(args, None);
        o.refused(&args.join(" "), &[needle]);
    }
    // A bit rate is bounded as a packet rate too, once the payload says how many packets.
    let o = netceil(&["run", "udp", "--rate", "9Tbit", "--size", "18"], None);
    o.refused("--rate 9Tbit at 18 B", &["above 1Gpps"]);
}
