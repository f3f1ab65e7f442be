//! `netceil lab`, live, as root: every topology comes up, passes traffic and goes down; knob
//! sweeps restore what they changed on success, on a failing workload, on SIGINT, and after a
//! `kill -9` followed by `lab down --all`. Two stores' labs coexist: each store's `lab list`
//! says whose the other's is, and `lab down --all` removes another's lab only once its owner is
//! gone (or `--force` names it). The lab's secret never lands in a file. Before and after each
//! test the namespaces, the owner records, the host's links, the nftables ruleset and the knobs
//! the tests touch are compared.
//!
//! Without root (or without `ip`/`nft`) each test says why and passes without running.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_netceil");

// The lab tests change host knobs and load the machine: one at a time
// (netceil_testkit::machine_lock, across test processes too).
const KNOBS: [&str; 7] = [
    "/proc/sys/net/core/netdev_budget",
    "/proc/sys/net/core/netdev_budget_usecs",
    "/proc/sys/net/core/netdev_max_backlog",
    "/proc/sys/net/core/busy_poll",
    "/proc/sys/net/core/busy_read",
    "/proc/sys/net/core/rmem_default",
    "/proc/sys/net/core/rmem_max",
];

fn skip_reason() -> Option<String> {
    netceil_testkit::first([
        netceil_testkit::needs_root("to create network namespaces"),
        netceil_testkit::needs_tool("ip", "-V", "iproute2"),
        netceil_testkit::needs_tool("nft", "--version", "nftables"),
    ])
}

fn out(cmd: &str, args: &[&str]) -> String {
    let o = Command::new(cmd).args(args).output().expect("runs");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// What the lab may touch, as text: namespaces, host links, the host's ruleset, the knobs.
fn machine_state() -> String {
    let mut s = String::new();
    s.push_str(&out("ip", &["-all", "netns", "list"]));
    s.push_str(&format!("records: {:?}\n", dir_names(RUN_DIR)));
    // Link names and flags, not counters.
    for l in out("ip", &["-o", "link"]).lines() {
        s.push_str(l.split(" link/").next().unwrap_or(l));
        s.push('\n');
    }
    s.push_str(&out("nft", &["list", "ruleset"]));
    for k in KNOBS {
        s.push_str(&format!(
            "{k}={}",
            std::fs::read_to_string(k).unwrap_or_default()
        ));
    }
    s
}

/// Where netceil keeps the owner records of its namespaces.
const RUN_DIR: &str = "/run/netceil";

/// The names in a directory, sorted; `None` when it does not exist.
fn dir_names(dir: &str) -> Option<Vec<String>> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    Some(v)
}

fn knob(path: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .trim()
        .to_string()
}

struct Env {
    _dir: tempfile::TempDir,
    db: std::path::PathBuf,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("runs.db");
        Env { _dir: dir, db }
    }

    fn netceil(&self) -> Command {
        let mut c = Command::new(BIN);
        c.env("NETCEIL_DB", &self.db);
        c
    }
}

fn run_ok(c: &mut Command) -> std::process::Output {
    let o = c.output().expect("netceil runs");
    assert!(
        o.status.success(),
        "{:?} failed: {}",
        c,
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

#[test]
fn every_topology_comes_up_passes_traffic_and_goes_down() {
    if netceil_testkit::skip(skip_reason()) {
        return;
    }
    let _one = netceil_testkit::machine_lock();
    let before = machine_state();
    let env = Env::new();
    for topo in [
        "direct",
        "bridge",
        "routed",
        "bridge-nf",
        "conntrack",
        "macvlan",
    ] {
        let o = run_ok(env.netceil().args([
            "lab",
            "run",
            topo,
            "--json",
            "-q",
            "--no-store",
            "--",
            "run",
            "udp",
            "--size",
            "256",
            "--rate",
            "20k",
            "--duration",
            "2",
        ]));
        let doc: Value = serde_json::from_slice(&o.stdout).expect("JSON");
        let run = &doc["steps"][0]["runs"][0];
        let r = &run["results"];
        let rx = r["rx_app_packets"].as_u64().unwrap();
        let tx = r["tx_packets"].as_u64().unwrap();
        assert!(tx > 10_000 && rx * 100 >= tx * 95, "{topo}: {rx} of {tx}");
        let lab = &run["workload"]["lab"];
        assert_eq!(lab["topology"], topo);
        // The receiving interface, counted by the lab itself, took in at least what was read.
        let nc_b = lab["interfaces"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["iface"] == "nc-b")
            .unwrap_or_else(|| panic!("{topo}: no nc-b in {lab:#}"));
        assert!(nc_b["rx_packets"].as_u64().unwrap() >= rx, "{topo}: {nc_b}");
        if topo != "direct" {
            let middle = lab["interfaces"]
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["netns"].as_str().unwrap().ends_with("-m"));
            assert!(middle, "{topo}: the middle namespace was sampled");
        }
        assert_eq!(doc["restored"], true);
        assert_eq!(machine_state(), before, "{topo} left something behind");
    }
}

#[test]
fn tcp_and_rr_searches_run_across_a_lab_and_answer_in_their_own_units() {
    if netceil_testkit::skip(skip_reason()) {
        return;
    }
    let _one = netceil_testkit::machine_lock();
    let before = machine_state();
    let env = Env::new();
    let short = [
        "--trial",
        "400ms",
        "--initial-trial",
        "200ms",
        "--precision",
        "25%",
        "--max-trials",
        "6",
    ];
    for (search, criterion, unit) in [
        (
            &[
                "tcp",
                "--retrans",
                "1%",
                "--flows",
                "2",
                "--min-rate",
                "20Mbit",
                "--max-rate",
                "200Mbit",
            ][..],
            "retransmits",
            "goodput_bits_per_second",
        ),
        (
            &[
                "rr",
                "--proto",
                "udp",
                "--p99",
                "20ms",
                "--min-rate",
                "200",
                "--max-rate",
                "2k",
            ][..],
            "p99",
            "transactions_per_second",
        ),
    ] {
        let o = run_ok(
            env.netceil()
                .args([
                    "lab",
                    "run",
                    "direct",
                    "--json",
                    "-q",
                    "--no-store",
                    "--",
                    "search",
                ])
                .args(search)
                .args(short),
        );
        let doc: Value = serde_json::from_slice(&o.stdout).expect("JSON");
        let run = &doc["steps"][0]["runs"][0];
        assert_eq!(run["workload"]["lab"]["topology"], "direct", "{search:?}");
        let knees = run["knees"].as_array().expect("knees[]");
        assert_eq!(knees.len(), 1, "{search:?}: {knees:#?}");
        let goal = &knees[0]["goal"];
        assert_eq!(goal["bound"]["criterion"], criterion, "{goal:#}");
        assert_eq!(goal["unit"], unit, "{goal:#}");
        let rate = goal["rate"]
            .as_f64()
            .expect("the namespaces pair meets the bound");
        // The verifying trial crossed the lab: its part is in the run and carried that rate.
        let by = goal["verified_by"].as_str().expect("a verifying trial");
        let part = run["parts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["run_id"] == by)
            .unwrap_or_else(|| panic!("{search:?}: no part {by}"));
        let reached = match criterion {
            "p99" => part["results"]["transactions_per_s"].as_f64().unwrap(),
            _ => part["results"]["rx_app_bits_per_s"].as_f64().unwrap(),
        };
        assert!(reached >= 0.99 * rate, "{search:?}: {reached} for {rate}");
        assert_eq!(doc["restored"], true);
        assert_eq!(machine_state(), before, "{search:?} left something behind");
    }
}

#[test]
fn a_lab_that_is_up_runs_workloads_until_it_is_taken_down() {
    if netceil_testkit::skip(skip_reason()) {
        return;
    }
    let _one = netceil_testkit::machine_lock();
    let before = machine_state();
    let env = Env::new();
    let name = format!("t{}", std::process::id());
    run_ok(
        env.netceil()
            .args(["lab", "up", "routed", "--name", &name, "--mtu", "9000"]),
    );
    // Down again even if an assertion below fails, so the next test starts clean.
    struct Down<'a>(&'a Env, String);
    impl Drop for Down<'_> {
        fn drop(&mut self) {
            let _ = self.0.netceil().args(["lab", "down", &self.1]).output();
        }
    }
    let guard = Down(&env, name.clone());
    let list = run_ok(env.netceil().args(["lab", "list"]));
    assert!(
        String::from_utf8_lossy(&list.stdout).contains(&format!("{name}  routed  MTU 9000  up"))
    );
    // A second lab of that name is refused, and changes nothing.
    let again = env
        .netceil()
        .args(["lab", "up", "direct", "--name", &name])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already up"));
    let o = run_ok(env.netceil().args([
        "lab",
        "run",
        "--name",
        &name,
        "--json",
        "-q",
        "--",
        "run",
        "udp",
        "--size",
        "8000",
        "--rate",
        "10k",
        "--duration",
        "3",
    ]));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let run = &doc["steps"][0]["runs"][0];
    assert!(
        run["results"]["rx_app_packets"].as_u64().unwrap() > 25_000,
        "{run:#}"
    );
    // The stored run carries the lab's series.
    let csv =
        run_ok(
            env.netceil()
                .args(["export", run["run_id"].as_str().unwrap(), "--format", "csv"]),
        );
    let header = String::from_utf8_lossy(&csv.stdout);
    assert!(
        header.contains("lab_rx_packets_per_s{iface=nc-mb"),
        "{}",
        &header[..header.len().min(400)]
    );
    run_ok(env.netceil().args(["lab", "down", &name]));
    std::mem::forget(guard);
    assert_eq!(machine_state(), before);
    let o = env.netceil().args(["lab", "down", &name]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "no such lab any more");
}

#[test]
fn a_knob_sweep_restores_the_original_even_when_the_workload_fails() {
    if netceil_testkit::skip(skip_reason()) {
        return;
    }
    let _one = netceil_testkit::machine_lock();
    let before = machine_state();
    let env = Env::new();
    let budget = "/proc/sys/net/core/netdev_budget";
    let original = knob(budget);
    // Both values run; the table says how each did; the original comes back.
    let o = run_ok(env.netceil().args([
        "lab",
        "run",
        "direct",
        "-q",
        "--no-store",
        "--knob",
        "net.core.netdev_budget=151,152",
        "--",
        "run",
        "udp",
        "--size",
        "64",
        "--rate",
        "20k",
        "--duration",
        "1",
    ]));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("\n151 ") && table.contains("\n152 "),
        "{table}"
    );
    assert!(table.contains("restored"), "{table}");
    assert_eq!(knob(budget), original);
    // A workload that fails after the knob is set (the payload is too large for UDP).
    let o = env
        .netceil()
        .args([
            "lab",
            "run",
            "bridge",
            "-q",
            "--no-store",
            "--knob",
            "net.core.netdev_budget=153,154",
            "--knob",
            "gro_flush_timeout@all=1000",
            "--",
            "run",
            "udp",
            "--size",
            "70000",
            "--duration",
            "1",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("65507"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(knob(budget), original);
    // A value the kernel refuses, after one that worked.
    let o = env
        .netceil()
        .args([
            "lab",
            "run",
            "direct",
            "-q",
            "--no-store",
            "--knob",
            "net.core.netdev_budget=155,notanumber",
            "--",
            "run",
            "udp",
            "--size",
            "64",
            "--rate",
            "10k",
            "--duration",
            "1",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert_eq!(knob(budget), original);
    // veth cannot coalesce interrupts: said, not faked.
    let o = env
        .netceil()
        .args([
            "lab",
            "run",
            "direct",
            "-q",
            "--no-store",
            "--knob",
            "coalesce.rx-usecs=8",
            "--",
            "run",
            "udp",
            "--size",
            "64",
            "--duration",
            "1",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no interrupts to moderate"));
    assert_eq!(machine_state(), before);
}

/// Waits until `check` holds, or fails after `secs`.
fn wait_for(secs: u64, what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !check() {
        assert!(Instant::now() < deadline, "{what}: not within {secs} s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Processes started by the lab process `pid` (they carry its PID in their environment).
fn lab_children(pid: u32) -> Vec<u32> {
    let tag = format!("NETCEIL_DIE_WITH_PARENT={pid}");
    netceil_testkit::pids_with_env(&tag)
}

fn start_long_lab(env: &Env, value: &str) -> std::process::Child {
    env.netceil()
        .args([
            "lab",
            "run",
            "bridge",
            "-q",
            "--no-store",
            "--knob",
            &format!("net.core.netdev_budget={value}"),
            "--",
            "run",
            "udp",
            "--size",
            "64",
            "--rate",
            "5k",
            "--duration",
            "30",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lab starts")
}

#[test]
fn sigint_stops_the_workload_and_restores_everything() {
    if netceil_testkit::skip(skip_reason()) {
        return;
    }
    let _one = netceil_testkit::machine_lock();
    let before = machine_state();
    let env = Env::new();
    let budget = "/proc/sys/net/core/netdev_budget";
    let original = knob(budget);
    let mut child = start_long_lab(&env, "163");
    let pid = child.id();
    wait_for(20, "the knob set", || knob(budget) == "163");
    wait_for(20, "the sender started", || lab_children(pid).len() >= 2);
    std::thread::sleep(Duration::from_millis(1500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::SIGINT,
    )
    .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "no stop after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130), "interrupted");
    assert_eq!(knob(budget), original);
    assert!(lab_children(pid).is_empty());
    assert_eq!(machine_state(), before);
}

#[test]
fn after_kill_9_lab_down_all_restores_everything() {
    if netceil_testkit::skip(skip_reason()) {
        return;
    }
    let _one = netceil_testkit::machine_lock();
    let before = machine_state();
    let env = Env::new();
    let budget = "/proc/sys/net/core/netdev_budget";
    let original = knob(budget);
    let mut child = start_long_lab(&env, "167");
    let pid = child.id();
    wait_for(20, "the knob set", || knob(budget) == "167");
    wait_for(20, "the sender started", || lab_children(pid).len() >= 2);
    child.kill().unwrap();
    child.wait().unwrap();
    // Its receiver and sender stop with it.
    wait_for(10, "the lab's processes to end", || {
        lab_children(pid).is_empty()
    });
    assert_eq!(knob(budget), "167", "kill -9 leaves the change");
    // Any netceil start warns; the list says what is left.
    let o = env.netceil().args(["runs"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("lab down --all") && err.contains("netdev_budget"),
        "{err}"
    );
    let list = run_ok(env.netceil().args(["lab", "list"]));
    assert!(String::from_utf8_lossy(&list.stdout).contains("left by a killed netceil"));
    let down = run_ok(env.netceil().args(["lab", "down", "--all"]));
    let said = String::from_utf8_lossy(&down.stdout);
    assert!(
        said.contains("netdev_budget") && said.contains("network namespace"),
        "{said}"
    );
    assert_eq!(knob(budget), original);
    assert_eq!(machine_state(), before);
    let o = env.netceil().args(["runs"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&o.stderr).contains("lab down --all"));
}

#[test]
fn bad_lab_input_exits_2_before_anything_is_built() {
    let env = Env::new();
    for (args, says) in [
        (
            vec!["lab", "run", "vxlan", "--", "run", "udp"],
            "possible values: direct, bridge, routed",
        ),
        (
            vec![
                "lab",
                "run",
                "direct",
                "--",
                "run",
                "udp",
                "--to",
                "1.2.3.4:5",
            ],
            "--to in the workload",
        ),
        (vec!["lab", "run", "direct", "--", "watch"], "must be `run"),
        (
            vec![
                "lab",
                "run",
                "direct",
                "--knob",
                "net.ipv4.tcp_rmem=1",
                "--",
                "run",
                "udp",
            ],
            "--allow-any-knob",
        ),
        (
            vec!["lab", "run", "direct", "--", "run", "udp", "--bogus"],
            "the workload",
        ),
        (
            vec![
                "lab",
                "compare",
                "--topologies",
                "direct",
                "--",
                "run",
                "udp",
            ],
            "at least two",
        ),
    ] {
        let o = env.netceil().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        if skip_reason().is_some() && err.contains("needs root") {
            continue;
        }
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

fn ns_exists(ns: &str) -> bool {
    std::path::Path::new("/run/netns").join(ns).exists()
}

fn running(child: &mut std::process::Child) -> bool {
    matches!(child.try_wait(), Ok(None))
}

/// What a test started and made, stopped and removed however the test ends (an assertion
/// that fails included): its processes by PID, its labs' namespaces and owner records by name
/// (the test made them), the key files a netceil that wrote them (before the fix) left for
/// the lab processes it started, the knob back to what it was.
struct Cleanup {
    children: Vec<std::process::Child>,
    labs: Vec<String>,
    /// Lab processes the test started and already waited for.
    ended: Vec<u32>,
    knob: Option<(&'static str, String)>,
}

impl Cleanup {
    fn new() -> Cleanup {
        Cleanup {
            children: Vec::new(),
            labs: Vec::new(),
            ended: Vec::new(),
            knob: None,
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for c in &mut self.children {
            if running(c) {
                let _ = c.kill();
            }
            let _ = c.wait();
            let deadline = Instant::now() + Duration::from_secs(10);
            while !lab_children(c.id()).is_empty() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        for lab in &self.labs {
            for side in ["a", "b", "m"] {
                let ns = format!("netceil-{lab}-{side}");
                if ns_exists(&ns) {
                    let _ = Command::new("ip").args(["netns", "del", &ns]).status();
                }
                let _ = std::fs::remove_file(format!("{RUN_DIR}/{ns}.json"));
            }
        }
        let _ = std::fs::remove_dir(RUN_DIR);
        let pids = self
            .children
            .iter()
            .map(|c| c.id())
            .chain(self.ended.clone());
        for pid in pids {
            for f in key_files(pid) {
                let _ = std::fs::remove_file(std::env::temp_dir().join(f));
            }
        }
        if let Some((path, value)) = &self.knob {
            let _ = std::fs::write(path, value);
        }
    }
}

/// A `lab run` of a topology built for it (lab `r{PID}`), bounded at 30 s.
fn start_lab(env: &Env, topo: &str, knob: Option<&str>) -> std::process::Child {
    let mut args = vec!["lab", "run", topo, "-q", "--no-store"];
    if let Some(k) = knob {
        args.extend(["--knob", k]);
    }
    args.extend([
        "--",
        "run",
        "udp",
        "--size",
        "64",
        "--rate",
        "2k",
        "--duration",
        "30",
    ]);
    env.netceil()
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("lab starts")
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn two_stores_labs_coexist_and_down_all_removes_the_others_only_once_its_owner_is_gone() {
    if netceil_testkit::skip(skip_reason()) {
        return;
    }
    let _one = netceil_testkit::machine_lock();
    let before = machine_state();
    let (env_a, env_b) = (Env::new(), Env::new());
    let budget = "/proc/sys/net/core/netdev_budget";
    let original = knob(budget);
    let mut c = Cleanup::new();
    c.knob = Some((budget, original.clone()));
    c.children.push(start_lab(&env_a, "direct", None));
    c.children.push(start_lab(
        &env_b,
        "direct",
        Some("net.core.netdev_budget=171"),
    ));
    let (pid_a, pid_b) = (c.children[0].id(), c.children[1].id());
    c.labs = vec![format!("r{pid_a}"), format!("r{pid_b}")];
    wait_for(20, "A's sender started", || lab_children(pid_a).len() >= 2);
    wait_for(20, "B's sender started", || lab_children(pid_b).len() >= 2);
    assert_eq!(knob(budget), "171");

    // Each store's list says whose the other's lab is.
    for (env, other) in [(&env_a, pid_b), (&env_b, pid_a)] {
        let list = text(&run_ok(env.netceil().args(["lab", "list"])));
        let line = list
            .lines()
            .find(|l| l.starts_with(&format!("lab r{other} ")))
            .unwrap_or_else(|| panic!("no line for lab r{other}:\n{list}"));
        assert!(
            line.contains("of another store")
                && line.contains(&format!("running, owned by netceil PID {other} ")),
            "{line}"
        );
    }
    // Neither store's `down --all` touches the other's running lab.
    for (env, other, i) in [(&env_a, pid_b, 1), (&env_b, pid_a, 0)] {
        let said = text(&run_ok(env.netceil().args(["lab", "down", "--all"])));
        assert!(!said.contains("reverted: network namespace"), "{said}");
        assert!(
            said.contains(&format!("left alone: lab r{other} ")),
            "{said}"
        );
        assert!(ns_exists(&format!("netceil-r{other}-a")), "{said}");
        assert!(running(&mut c.children[i]), "the other lab's run goes on");
    }
    assert_eq!(knob(budget), "171", "B's knob is B's while B runs");

    // B is killed: its lab is an orphan now, and A's `down --all` removes it, knob included.
    c.children[1].kill().unwrap();
    c.children[1].wait().unwrap();
    wait_for(10, "B's processes to end", || {
        lab_children(pid_b).is_empty()
    });
    let list = text(&run_ok(env_a.netceil().args(["lab", "list"])));
    assert!(
        list.contains(&format!(
            "orphaned: its owner, netceil PID {pid_b}, is gone"
        )),
        "{list}"
    );
    let said = text(&run_ok(env_a.netceil().args(["lab", "down", "--all"])));
    assert!(
        said.contains(&format!("reverted: network namespace netceil-r{pid_b}-a"))
            && said.contains("netdev_budget"),
        "{said}"
    );
    assert!(!ns_exists(&format!("netceil-r{pid_b}-a")));
    assert_eq!(knob(budget), original);
    // A's own lab runs on, and B's journal knows its changes were reverted.
    assert!(ns_exists(&format!("netceil-r{pid_a}-a")));
    assert!(running(&mut c.children[0]));
    let o = env_b.netceil().args(["runs"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("lab down --all"),
        "{}",
        text(&o)
    );

    // A stops by itself on SIGINT and takes its lab with it.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid_a as i32),
        nix::sys::signal::SIGINT,
    )
    .unwrap();
    let started = Instant::now();
    while running(&mut c.children[0]) {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "A did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(c);
    assert_eq!(machine_state(), before);
}

#[test]
fn another_stores_kept_lab_is_left_alone_until_forced_or_its_journal_is_gone() {
    if netceil_testkit::skip(skip_reason()) {
        return;
    }
    let _one = netceil_testkit::machine_lock();
    let before = machine_state();
    let (env_a, env_b) = (Env::new(), Env::new());
    let name = format!("k{}", std::process::id());
    let mut c = Cleanup::new();
    c.labs = vec![name.clone()];
    run_ok(
        env_a
            .netceil()
            .args(["lab", "up", "direct", "--name", &name]),
    );
    let ns = format!("netceil-{name}-a");

    // B leaves A's kept lab alone, and says whose it is.
    let said = text(&run_ok(env_b.netceil().args(["lab", "down", "--all"])));
    assert!(said.contains(&format!("left alone: lab {name} ")), "{said}");
    assert!(ns_exists(&ns), "{said}");
    let o = env_b
        .netceil()
        .args(["lab", "down", &name])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("kept up by `netceil lab up`") && text(&o).contains("--force"),
        "{}",
        text(&o)
    );
    assert!(ns_exists(&ns));

    // Named with --force, it goes, and A's journal records that it went.
    let said = text(&run_ok(
        env_b.netceil().args(["lab", "down", &name, "--force"]),
    ));
    assert!(
        said.contains(&format!("lab {name}: kept up by `netceil lab up`"))
            && said.contains("(--force)")
            && said.contains(&format!("reverted: network namespace {ns}")),
        "{said}"
    );
    assert!(!ns_exists(&ns));
    // (Other netceil namespaces on the machine may be listed: only this lab must not be.)
    let list = text(&run_ok(env_a.netceil().args(["lab", "list"])));
    assert!(!list.contains(&name), "{list}");

    // Up again, then its store is deleted: nothing keeps it, and B's `down --all` removes it.
    run_ok(
        env_a
            .netceil()
            .args(["lab", "up", "direct", "--name", &name]),
    );
    assert!(ns_exists(&ns));
    let journal = env_a.db.parent().unwrap().join("lab-journal.jsonl");
    std::fs::remove_file(&journal).unwrap();
    let list = text(&run_ok(env_b.netceil().args(["lab", "list"])));
    assert!(list.contains("no longer holds it"), "{list}");
    let said = text(&run_ok(env_b.netceil().args(["lab", "down", "--all"])));
    assert!(
        said.contains(&format!("reverted: network namespace {ns}")),
        "{said}"
    );
    assert!(!ns_exists(&ns));
    drop(c);
    assert_eq!(machine_state(), before);
}

/// The lab's secret files a lab process `pid` made in the temporary directory.
fn key_files(pid: u32) -> Vec<String> {
    let prefix = format!("netceil-lab-key-{pid}-");
    dir_names(&std::env::temp_dir().display().to_string())
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

#[test]
fn the_labs_secret_never_lands_in_a_file_not_even_after_kill_9() {
    if netceil_testkit::skip(skip_reason()) {
        return;
    }
    let _one = netceil_testkit::machine_lock();
    let before = machine_state();
    let env = Env::new();
    let mut c = Cleanup::new();
    // A normal run authenticates (its run arrives) and leaves no key behind.
    let child = env
        .netceil()
        .args([
            "lab",
            "run",
            "direct",
            "-q",
            "--no-store",
            "--json",
            "--",
            "run",
            "udp",
            "--size",
            "64",
            "--rate",
            "5k",
            "--duration",
            "1",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    c.labs.push(format!("r{pid}"));
    c.ended.push(pid);
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(doc["steps"][0]["runs"][0]["results"]["rx_app_packets"].as_u64() > Some(1000));
    assert_eq!(key_files(pid), Vec::<String>::new());

    // While a lab runs, no key file exists; after its kill -9 and recovery, none either.
    c.children.push(start_lab(&env, "direct", None));
    let pid = c.children[0].id();
    c.labs.push(format!("r{pid}"));
    wait_for(20, "the sender started", || lab_children(pid).len() >= 2);
    assert_eq!(key_files(pid), Vec::<String>::new(), "while it runs");
    c.children[0].kill().unwrap();
    c.children[0].wait().unwrap();
    wait_for(10, "the lab's processes to end", || {
        lab_children(pid).is_empty()
    });
    run_ok(env.netceil().args(["lab", "down", "--all"]));
    assert_eq!(key_files(pid), Vec::<String>::new(), "after kill -9");
    drop(c);
    assert_eq!(machine_state(), before);
}
