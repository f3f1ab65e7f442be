//! Live induced conditions on loopback: each must yield the matching finding, and an idle
//! machine must yield none.

use assert_cmd::Command;
use serde_json::Value;
use std::time::Duration;

// These tests load the machine or need it quiet: they run one at a time.
// (netceil_testkit::machine_lock, across test processes too.)

fn run_json(prefix: &[&str], args: &[&str]) -> Value {
    let _one_at_a_time = netceil_testkit::machine_lock();
    let (prog, pre) = match prefix.split_first() {
        Some((p, rest)) => (p.to_string(), rest.to_vec()),
        None => (
            assert_cmd::cargo::cargo_bin("netceil")
                .display()
                .to_string(),
            vec![],
        ),
    };
    let mut c = Command::new(prog);
    c.args(pre);
    if !prefix.is_empty() {
        c.arg(assert_cmd::cargo::cargo_bin("netceil"));
    }
    let out = c
        .args(args)
        .args(["--json", "-q", "--no-store"])
        .timeout(Duration::from_secs(60))
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn causes(run: &Value) -> Vec<String> {
    run["findings"]
        .as_array()
        .expect("findings[]")
        .iter()
        .map(|f| f["cause"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn assert_finding(run: &Value, cause: &str) {
    let all = causes(run);
    assert!(
        all.iter().any(|c| c == cause),
        "expected a {cause} finding, got {all:?}\n{}",
        run["findings"]
    );
    let f = run["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["cause"] == cause)
        .unwrap();
    let conf = f["confidence"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&conf), "confidence {conf}");
    assert!(
        !f["evidence"].as_array().unwrap().is_empty(),
        "evidence for {cause}"
    );
    assert!(
        !f["advice"].as_array().unwrap().is_empty(),
        "advice for {cause}"
    );
}

#[test]
fn tiny_receive_buffer_under_overload_gives_a_buffer_finding() {
    let run = run_json(&[], &["run", "udp", "--rcvbuf", "4K", "--duration", "3"]);
    assert!(
        run["results"]["lost_packets"].as_u64().unwrap() > 0,
        "the overload must lose packets"
    );
    assert_finding(&run, "buffer_drops");
}

#[test]
fn unreachable_rate_gives_generator_limited() {
    let run = run_json(&[], &["run", "udp", "--rate", "50M", "--duration", "2"]);
    assert_eq!(run["results"]["generator_limited"], true);
    assert_finding(&run, "generator_limited");
}

#[test]
fn spin_pacing_at_a_low_rate_gives_busy_wait_on_our_sender() {
    let run = run_json(
        &[],
        &[
            "run",
            "udp",
            "--rate",
            "2k",
            "--pacing",
            "spin",
            "--duration",
            "3",
        ],
    );
    assert_finding(&run, "generator_busy_wait");
}

#[test]
fn sender_and_receiver_pinned_to_one_core_give_a_hot_cpu() {
    let one_cpu = std::thread::available_parallelism().map_or(1, |n| n.get()) < 2;
    if netceil_testkit::skip_on(
        one_cpu.then(|| "one CPU only, so there is no idle core to contrast with".into()),
    ) {
        return;
    }
    let run = run_json(&["taskset", "-c", "0"], &["run", "udp", "--duration", "4"]);
    // On a shared machine other sessions' programs may take much of CPU 0 (autogroup gives
    // each session an equal share, whatever its nice): then the core is still the ceiling, and
    // the verdict names who took it.
    let contended = causes(&run).first().is_some_and(|c| c == "cpu_contention");
    assert_finding(
        &run,
        if contended {
            "cpu_contention"
        } else {
            "hot_cpu"
        },
    );
}

#[test]
fn an_idle_machine_gives_no_ceiling() {
    let run = run_json(&[], &["watch", "--duration", "3"]);
    let ceilings: Vec<String> = causes(&run)
        .into_iter()
        .filter(|c| !matches!(c.as_str(), "no_load" | "no_ceiling"))
        .collect();
    assert!(
        ceilings.is_empty(),
        "idle machine, yet: {ceilings:?}\n{}",
        run["findings"]
    );
}

#[test]
fn closed_loop_rr_on_loopback_is_latency_bound() {
    let run = run_json(&[], &["run", "rr", "--duration", "3"]);
    assert_eq!(run["results"]["closed_loop_in_flight"], 1);
    assert_finding(&run, "latency_bound");
    let all = causes(&run);
    assert_eq!(all[0], "latency_bound", "{}", run["findings"]);
    assert!(
        !all.iter().any(|c| c == "interrupt_bound"),
        "the round trip explains the rate: {all:?}"
    );
    let nic_advice = run["findings"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["advice"].as_array().unwrap())
        .any(|a| {
            a["knob"]
                .as_str()
                .unwrap_or_default()
                .contains("ethtool -C")
        });
    assert!(!nic_advice, "no NIC moderation advice on loopback");
}

#[test]
fn load_threads_are_recorded_by_thread_id_and_not_called_a_polling_loop() {
    let run = run_json(&[], &["run", "udp", "--duration", "3"]);
    let own: Vec<u64> = run["meta"]["own_thread_ids"]
        .as_array()
        .expect("meta.own_thread_ids")
        .iter()
        .map(|t| t.as_u64().unwrap())
        .collect();
    // The sampled threads of the sender and receiver are exactly the recorded ones.
    let load_tids: Vec<u64> = run["series"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"] == "thread_cpu_pct")
        .filter(|m| {
            m["labels"]["comm"]
                .as_str()
                .is_some_and(|c| c.starts_with("netceil-udp"))
        })
        .map(|m| m["labels"]["tid"].as_str().unwrap().parse().unwrap())
        .collect();
    assert!(load_tids.len() >= 2, "sender and receiver sampled");
    for tid in &load_tids {
        assert!(own.contains(tid), "load thread {tid} not in {own:?}");
    }
    let all = causes(&run);
    assert!(
        !all.iter().any(|c| c == "polling_thread"),
        "netceil's own load threads were called a polling loop: {}",
        run["findings"]
    );
}
