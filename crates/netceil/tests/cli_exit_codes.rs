//! Exit codes a script can trust, the same for every command: 0 success, 1 a failure at run
//! time, 2 bad input, 128 + n a signal (130 SIGINT, 143 SIGTERM); a closed stdout ends
//! quietly with 0; an error's text is printed once; a refused `--to` leaves no run.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_netceil");

/// Every process a test starts carries this variable, so that anything it left running can
/// be found afterwards by its environment, not by its name.
const MARK: &str = "NETCEIL_EXIT_TEST_MARK";

struct Env {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    db: PathBuf,
    mark: String,
}

impl Env {
    fn new(name: &str) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        Env {
            db: path.join("runs.db"),
            dir: path,
            _dir: dir,
            mark: format!("{name}-{}", std::process::id()),
        }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env("NETCEIL_DB", &self.db)
            .env(MARK, &self.mark)
            .stdin(Stdio::null());
        c
    }

    /// Runs to the end (within 60 s): the exit code, stdout and stderr.
    fn run(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let mut c = self.cmd(args);
        let child = c
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let o = wait_bounded(child, Duration::from_secs(60), &format!("{args:?}"));
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    }

    /// The ids of the stored runs.
    fn stored(&self) -> Vec<String> {
        let (code, out, err) = self.run(&["runs", "--json"]);
        assert_eq!(code, Some(0), "runs: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|r| r["run_id"].as_str().unwrap().to_string())
            .collect()
    }

    /// Processes still running with this test's mark.
    fn left_running(&self) -> Vec<u32> {
        let tag = format!("{MARK}={}", self.mark);
        netceil_testkit::pids_with_env(&tag)
    }
}

/// Waits for a child, killing it (by its PID) if it overruns, so no test hangs.
fn wait_bounded(child: Child, limit: Duration, what: &str) -> std::process::Output {
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(o) => o.unwrap(),
        Err(_) => {
            signal(pid, nix::sys::signal::SIGKILL);
            panic!("{what}: still running after {limit:?}");
        }
    }
}

fn signal(pid: u32, sig: nix::sys::signal::Signal) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), sig);
}

/// A loopback TCP port with nothing listening on it.
fn closed_port() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    format!("127.0.0.1:{port}")
}

/// The PID of a process that has ended and been reaped.
fn gone_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

fn fixture(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../netceil-import/tests/fixtures")
        .join(path)
        .display()
        .to_string()
}

/// The subcommands `netceil --help` lists.
fn subcommands() -> Vec<String> {
    let o = Command::new(BIN).arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// One command's rows: arguments that succeed, that are bad input, and (where a failure at
/// run time can be provoked cheaply) that fail while running.
struct Row {
    command: &'static str,
    ok: Vec<String>,
    bad: Vec<Vec<String>>,
    /// Arguments, and the store to use (empty: the test's own).
    runtime: Vec<(Vec<String>, &'static str)>,
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A store that cannot be opened: a path under a file.
const BROKEN_DB: &str = "/dev/null/runs.db";

/// Every command's rows, in the order they run (the store rows need the runs the measuring
/// rows stored before them).
fn table(env: &Env, ids: &[String]) -> Vec<Row> {
    let closed = closed_port();
    let mut rows = measuring_rows(&closed);
    rows.extend(store_rows(env, ids));
    rows.extend(server_and_tool_rows());
    rows.extend(campaign_rows(&closed));
    rows.extend(vec![
        Row {
            command: "lab",
            ok: args(&["lab", "list"]),
            bad: vec![args(&["lab", "down"])],
            runtime: vec![],
        },
        Row {
            command: "help",
            ok: args(&["help", "run"]),
            bad: vec![args(&["help", "no-such-command"])],
            runtime: vec![],
        },
    ]);
    rows
}

/// `run` and `watch`; `closed` is a loopback port with nothing listening.
fn measuring_rows(closed: &str) -> Vec<Row> {
    let gone = gone_pid().to_string();
    vec![
        Row {
            command: "run",
            ok: args(&["run", "-q", "udp", "--rate", "2k", "--duration", "300ms"]),
            bad: vec![
                args(&["run", "--sample-interval", "1ms", "udp", "--duration", "1s"]),
                args(&["run", "--to", "127.0.0.1:0", "udp", "--duration", "1s"]),
            ],
            runtime: vec![
                (
                    args(&["run", "-q", "--to", closed, "udp", "--duration", "1s"]),
                    "",
                ),
                // The run could not be stored: not a success.
                (
                    args(&["run", "-q", "udp", "--rate", "2k", "--duration", "300ms"]),
                    BROKEN_DB,
                ),
            ],
        },
        Row {
            command: "watch",
            ok: args(&["watch", "-q", "--interval", "100ms", "--duration", "300ms"]),
            bad: vec![
                args(&["watch", "--interval", "2h", "--duration", "1s"]),
                args(&["watch", "--pid", &gone, "--duration", "1s"]),
            ],
            // The run could not be stored: not a success.
            runtime: vec![(
                args(&["watch", "-q", "--interval", "100ms", "--duration", "300ms"]),
                BROKEN_DB,
            )],
        },
    ]
}

/// The commands that read an imported log or the store: `ids` are stored runs.
fn store_rows(env: &Env, ids: &[String]) -> Vec<Row> {
    let vmstat = fixture("vmstat/linux-procps4.txt");
    let out_file = env.dir.join("report.html").display().to_string();
    let (a, b) = (ids[0].as_str(), ids[1].as_str());
    vec![
        Row {
            command: "analyze",
            ok: args(&["analyze", &vmstat]),
            bad: vec![args(&["analyze", "/nonexistent/vmstat.txt"])],
            runtime: vec![(args(&["analyze", &vmstat]), BROKEN_DB)],
        },
        Row {
            command: "runs",
            ok: args(&["runs"]),
            bad: vec![args(&["runs", "--last", "many"])],
            runtime: vec![(args(&["runs"]), BROKEN_DB)],
        },
        Row {
            command: "show",
            ok: args(&["show", a]),
            bad: vec![args(&["show", "no-such-run"])],
            runtime: vec![(args(&["show", a]), BROKEN_DB)],
        },
        Row {
            command: "rm",
            ok: args(&["rm", ids[2].as_str()]),
            bad: vec![args(&["rm", "no-such-run"])],
            runtime: vec![(args(&["rm", a]), BROKEN_DB)],
        },
        Row {
            command: "export",
            ok: args(&["export", a, "--format", "csv"]),
            bad: vec![args(&["export", "no-such-run"])],
            runtime: vec![(args(&["export", a]), BROKEN_DB)],
        },
        Row {
            command: "report",
            ok: args(&["report", a, "-o", &out_file]),
            bad: vec![args(&["report", "no-such-run", "-o", &out_file])],
            runtime: vec![(args(&["report", a, "-o", &out_file]), BROKEN_DB)],
        },
        Row {
            command: "compare",
            ok: args(&["compare", a, b]),
            bad: vec![
                args(&["compare", a, "no-such-run"]),
                // A UDP run against a TCP run, without --unlike.
                args(&["compare", a, ids[3].as_str()]),
            ],
            runtime: vec![(args(&["compare", a, b]), BROKEN_DB)],
        },
    ]
}

/// The far-end servers, and the completions and man page.
fn server_and_tool_rows() -> Vec<Row> {
    vec![
        Row {
            command: "serve",
            ok: args(&["serve", "--listen", "127.0.0.1:0", "--duration", "300ms"]),
            // Without a key, only loopback.
            bad: vec![args(&[
                "serve",
                "--listen",
                "192.0.2.1:5301",
                "--duration",
                "1s",
            ])],
            runtime: vec![],
        },
        Row {
            command: "recv",
            ok: args(&["recv", "--listen", "127.0.0.1:0", "--duration", "300ms"]),
            bad: vec![args(&[
                "recv",
                "--listen",
                "192.0.2.1:5301",
                "--duration",
                "1s",
            ])],
            runtime: vec![],
        },
        Row {
            command: "completions",
            ok: args(&["completions", "bash"]),
            bad: vec![args(&["completions", "no-such-shell"])],
            runtime: vec![],
        },
        Row {
            command: "man",
            ok: args(&["man"]),
            bad: vec![args(&["man", "--out", "/etc/passwd"])],
            runtime: vec![],
        },
    ]
}

/// `search` and `sweep`; `closed` is a loopback port with nothing listening.
fn campaign_rows(closed: &str) -> Vec<Row> {
    vec![
        Row {
            command: "search",
            ok: args(&[
                "search",
                "udp",
                "-q",
                "--no-store",
                "--sizes",
                "64",
                "--trial",
                "200ms",
                "--initial-trial",
                "100ms",
                "--precision",
                "50%",
                "--min-rate",
                "1k",
                "--max-rate",
                "5k",
                "--max-trials",
                "2",
            ]),
            bad: vec![args(&["search", "udp", "--no-store", "--loss", "200%"])],
            runtime: vec![(
                args(&["search", "udp", "-q", "--to", closed, "--sizes", "64"]),
                "",
            )],
        },
        Row {
            command: "sweep",
            ok: args(&[
                "sweep",
                "udp",
                "-q",
                "--no-store",
                "--sizes",
                "64",
                "--interval",
                "100us..200us/100us",
                "--count",
                "50",
            ]),
            bad: vec![args(&["sweep", "udp", "--no-store", "--interval", "fast"])],
            runtime: vec![(
                args(&[
                    "sweep", "udp", "-q", "--to", closed, "--sizes", "64", "--count", "50",
                ]),
                "",
            )],
        },
    ]
}

#[test]
fn every_command_exits_by_the_table() {
    let env = Env::new("table");
    let mut ids = Vec::new();
    for _ in 0..3 {
        let (code, _, err) = env.run(&["run", "-q", "udp", "--rate", "2k", "--duration", "200ms"]);
        assert_eq!(code, Some(0), "{err}");
    }
    ids.extend(env.stored());
    // A TCP run, for `compare` of unlike workloads.
    let (code, _, err) = env.run(&["run", "-q", "tcp", "--duration", "200ms"]);
    assert_eq!(code, Some(0), "{err}");
    let tcp = env.stored().into_iter().find(|id| !ids.contains(id));
    ids.push(tcp.expect("the TCP run is stored"));
    let rows = table(&env, &ids);
    let listed = subcommands();
    assert!(
        listed.len() > 10,
        "netceil --help lists its commands: {listed:?}"
    );
    for c in &listed {
        assert!(
            rows.iter().any(|r| r.command == c),
            "`{c}` has no row in the table of exit codes"
        );
    }
    let mut wrong = Vec::new();
    let mut check = |args: &[String], db: &str, want: i32| {
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut c = env.cmd(&argv);
        if !db.is_empty() {
            c.env("NETCEIL_DB", db);
        }
        let child = c
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let o = wait_bounded(child, Duration::from_secs(60), &format!("{argv:?}"));
        if o.status.code() != Some(want) {
            wrong.push(format!(
                "{argv:?}{}: exit {:?}, expected {want}; stderr: {}",
                if db.is_empty() {
                    ""
                } else {
                    " (store unusable)"
                },
                o.status.code(),
                String::from_utf8_lossy(&o.stderr).trim()
            ));
        }
    };
    for r in &rows {
        if r.command == "lab"
            && netceil_testkit::skip(netceil_testkit::needs_root("for the `lab` rows"))
        {
            continue;
        }
        check(&r.ok, "", 0);
        for a in &r.bad {
            check(a, "", 2);
        }
        for (a, db) in &r.runtime {
            check(a, db, 1);
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(env.left_running().is_empty());
}

/// Reads `pipe` on a thread; the receiver gets each line as it comes.
fn lines(pipe: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn wait_for_line(rx: &mpsc::Receiver<String>, needle: &str, what: &str) {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) if l.contains(needle) => return,
            Ok(_) => {}
            Err(_) => panic!("{what}: no line with {needle:?} within 20 s"),
        }
    }
}

/// Where a long-running command says it is running.
#[derive(Clone, Copy)]
enum Ready {
    Stdout(&'static str),
    Stderr(&'static str),
    /// Its run is in the store.
    Stored,
}

/// Starts `args`, waits until it is running, sends `sig` to the PID started, and checks the
/// exit code and that nothing of it is left running.
fn stops_on(env: &Env, args: &[&str], ready: Ready, sig: nix::sys::signal::Signal) -> String {
    let mut child = env
        .cmd(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = lines(child.stdout.take().unwrap());
    let err = lines(child.stderr.take().unwrap());
    let what = format!("{args:?}");
    match ready {
        Ready::Stdout(n) => wait_for_line(&out, n, &what),
        Ready::Stderr(n) => wait_for_line(&err, n, &what),
        Ready::Stored => {
            let until = Instant::now() + Duration::from_secs(20);
            while env.stored().is_empty() {
                assert!(Instant::now() < until, "{what}: no run stored within 20 s");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    signal(child.id(), sig);
    let status = wait_bounded(child, Duration::from_secs(20), &what).status;
    let stderr: Vec<String> = err.try_iter().collect();
    let want = 128 + sig as i32;
    assert_eq!(
        status.code(),
        Some(want),
        "{what} on {sig}: stderr {stderr:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while !env.left_running().is_empty() {
        assert!(
            Instant::now() < deadline,
            "{what}: left {:?} running",
            env.left_running()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    stderr.join("\n")
}

#[test]
fn sigint_and_sigterm_stop_the_long_running_commands_with_130_and_143() {
    use nix::sys::signal::Signal::{SIGINT, SIGTERM};
    let long: [(&[&str], Ready); 5] = [
        (
            &["run", "udp", "--rate", "2k", "--duration", "30s"],
            Ready::Stdout("udp"),
        ),
        (&["watch", "--interval", "100ms"], Ready::Stdout("time")),
        (
            &["serve", "--listen", "127.0.0.1:0"],
            Ready::Stdout("listening on"),
        ),
        (
            &[
                "search",
                "udp",
                "--sizes",
                "64",
                "--trial",
                "20s",
                "--initial-trial",
                "20s",
            ],
            Ready::Stderr("measuring"),
        ),
        (
            &[
                "sweep",
                "udp",
                "--sizes",
                "64",
                "--interval",
                "10ms..20ms/10ms",
                "--count",
                "3000",
            ],
            Ready::Stored,
        ),
    ];
    for (args, ready) in long {
        for sig in [SIGINT, SIGTERM] {
            let env = Env::new("signals");
            stops_on(&env, args, ready, sig);
            // What was recorded is kept: the stopped run is in the store.
            if matches!(args[0], "run" | "watch" | "search" | "sweep") {
                assert_eq!(env.stored().len(), 1, "{args:?} on {sig}: the run is kept");
            }
        }
    }
}

#[test]
fn a_lab_stops_on_sigint_and_sigterm_and_removes_its_namespaces() {
    use nix::sys::signal::Signal::{SIGINT, SIGTERM};
    if netceil_testkit::skip(netceil_testkit::needs_root(
        "for `lab run` to create network namespaces",
    )) {
        return;
    }
    let netns = || {
        let o = Command::new("ip").args(["netns", "list"]).output();
        o.map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    for sig in [SIGINT, SIGTERM] {
        let env = Env::new("lab");
        let args = [
            "lab",
            "run",
            "direct",
            "--no-store",
            "--",
            "run",
            "udp",
            "--size",
            "64",
            "--rate",
            "2k",
            "--duration",
            "30",
        ];
        let mut child = env
            .cmd(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let err = lines(child.stderr.take().unwrap());
        // The sender runs in one of the lab's namespaces: find which.
        let tag = format!("NETCEIL_DIE_WITH_PARENT={pid}");
        let deadline = Instant::now() + Duration::from_secs(30);
        let ours = loop {
            let senders: Vec<u32> = env
                .left_running()
                .into_iter()
                .filter(|p| {
                    std::fs::read(format!("/proc/{p}/environ"))
                        .map(|e| e.split(|b| *b == 0).any(|v| v == tag.as_bytes()))
                        .unwrap_or(false)
                })
                .collect();
            let mut names: Vec<String> = senders
                .iter()
                .filter_map(|p| {
                    let o = Command::new("ip")
                        .args(["netns", "identify", &p.to_string()])
                        .output()
                        .ok()?;
                    let n = String::from_utf8_lossy(&o.stdout).trim().to_string();
                    (!n.is_empty()).then_some(n)
                })
                .collect();
            names.sort();
            names.dedup();
            if senders.len() >= 2 && !names.is_empty() {
                break names;
            }
            if Instant::now() > deadline {
                signal(pid, nix::sys::signal::SIGKILL);
                panic!("the lab did not start its sender and receiver within 30 s");
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        std::thread::sleep(Duration::from_millis(1000));
        signal(pid, sig);
        let status = wait_bounded(child, Duration::from_secs(30), "lab run").status;
        let stderr: Vec<String> = err.try_iter().collect();
        assert_eq!(
            status.code(),
            Some(128 + sig as i32),
            "lab on {sig}: {stderr:?}"
        );
        let left = netns();
        for ns in &ours {
            assert!(!left.contains(ns.as_str()), "lab on {sig} left {ns}");
        }
        assert!(env.left_running().is_empty(), "lab on {sig} left processes");
    }
}

/// A stdout whose reader has already gone: every write to it is a broken pipe.
fn closed_stdout() -> Stdio {
    let (r, w) = nix::unistd::pipe().unwrap();
    drop(r);
    Stdio::from(w)
}

#[test]
fn a_closed_stdout_ends_the_command_quietly_with_0() {
    let env = Env::new("pipe");
    let (code, _, err) = env.run(&["run", "-q", "udp", "--rate", "2k", "--duration", "200ms"]);
    assert_eq!(code, Some(0), "{err}");
    for args in [
        &["watch", "--interval", "100ms"][..],
        &["export", "last", "--format", "json"],
        &["export", "last", "--format", "csv"],
        &["runs"],
        &["show", "last"],
    ] {
        let child = env
            .cmd(args)
            .stdout(closed_stdout())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let o = wait_bounded(child, Duration::from_secs(20), &format!("{args:?}"));
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(stderr.trim().is_empty(), "{args:?} said: {stderr}");
    }
    // The watch that nobody read is kept.
    assert_eq!(env.stored().len(), 2);
    // `| head -1`: the first line is read, then the reader goes.
    let mut child = env
        .cmd(&["watch", "--interval", "100ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("time"), "{first}");
    let o = wait_bounded(child, Duration::from_secs(20), "watch | head -1");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(stderr.trim().is_empty(), "{stderr}");
}

#[test]
fn an_error_is_said_once() {
    let env = Env::new("once");
    let key = env.dir.join("absent.key").display().to_string();
    let (code, _, err) = env.run(&[
        "run",
        "--to",
        &closed_port(),
        "--key-file",
        &key,
        "udp",
        "--duration",
        "1s",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn a_refused_to_stores_no_run() {
    let env = Env::new("refused");
    // No server there.
    let (code, _, err) = env.run(&[
        "run",
        "-q",
        "--to",
        &closed_port(),
        "udp",
        "--duration",
        "1s",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("cannot reach"), "{err}");
    assert!(
        env.stored().is_empty(),
        "a run that reached no server is not kept"
    );
    for args in [
        &["search", "udp", "-q", "--sizes", "64"][..],
        &["sweep", "udp", "-q", "--sizes", "64", "--count", "50"],
    ] {
        let port = closed_port();
        let mut argv = vec![args[0], args[1], "--to", &port];
        argv.extend_from_slice(&args[2..]);
        let (code, _, err) = env.run(&argv);
        assert_eq!(code, Some(1), "{argv:?}: {err}");
        assert!(
            env.stored().is_empty(),
            "{argv:?}: a test that reached no server is not kept"
        );
    }

    // A server with another key.
    let theirs = env.dir.join("theirs.key");
    let mine = env.dir.join("mine.key");
    std::fs::write(&theirs, "0123456789abcdef0123456789abcdef\n").unwrap();
    std::fs::write(&mine, "fedcba9876543210fedcba9876543210\n").unwrap();
    let mut serve = env
        .cmd(&[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--key-file",
            theirs.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = lines(serve.stdout.take().unwrap());
    let until = Instant::now() + Duration::from_secs(20);
    let addr = loop {
        let l = out
            .recv_timeout(until.saturating_duration_since(Instant::now()))
            .expect("serve says where it listens");
        if let Some(rest) = l.strip_prefix("listening on ") {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    let (code, _, err) = env.run(&[
        "run",
        "-q",
        "--to",
        &addr,
        "--key-file",
        mine.to_str().unwrap(),
        "udp",
        "--duration",
        "1s",
    ]);
    // The server's refusal: the client's key is its input.
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("authentication failed"), "{err}");
    // Over a limit: longer than the server allows.
    let (code, _, err) = env.run(&[
        "run",
        "-q",
        "--to",
        &addr,
        "--key-file",
        theirs.to_str().unwrap(),
        "udp",
        "--duration",
        "120s",
    ]);
    assert_eq!(code, Some(2), "{err}");
    signal(serve.id(), nix::sys::signal::SIGTERM);
    let status = wait_bounded(serve, Duration::from_secs(20), "serve").status;
    assert_eq!(status.code(), Some(143));
    assert!(
        env.stored().is_empty(),
        "refused tests are not kept: {:?}",
        env.stored()
    );
}

#[test]
fn a_killed_run_shows_its_interval() {
    let env = Env::new("killed");
    let mut child = env
        .cmd(&["run", "udp", "--rate", "2k", "--duration", "30s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = lines(child.stdout.take().unwrap());
    wait_for_line(&out, "udp", "run");
    std::thread::sleep(Duration::from_millis(2500));
    signal(child.id(), nix::sys::signal::SIGKILL);
    let _ = child.wait();
    let (code, shown, err) = env.run(&["show", "last"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(shown.contains("INCOMPLETE"), "{shown}");
    assert!(!shown.contains("intervals of 0 s"), "{shown}");
    assert!(shown.contains("intervals of 1 s recorded"), "{shown}");
}
