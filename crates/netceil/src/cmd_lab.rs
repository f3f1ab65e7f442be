//! `netceil lab`: network-namespace topologies on this machine, workloads across them, A/B
//! between them, and knob sweeps that always restore.
//!
//! A workload runs as two netceil processes: `netceil serve` in the receiving namespace (b) and
//! the sender (`run`, `sweep` or `search`, with `--to` the receiver's lab address) in the
//! sending namespace (a). The sender's run is the record: it samples the host's CPU, softirq
//! and context switches (not namespaced) and its own namespace, and gets the receiver's kernel
//! counters back in its end-of-flow reports. This process adds every lab interface's packet
//! counters (both ends and the middle), read by threads parked in each namespace, as
//! `lab_*{netns,iface}` series, and the lab, its path and the knobs set as labels.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use netceil_lab::journal::{Change, Journal, Session};
use netceil_lab::knob::{self, Knob};
use netceil_lab::nsdev::NsReader;
use netceil_lab::topo::{self, LabSpec, Topology};
use netceil_model::{MetricId, Run, Unit};
use serde_json::json;

use crate::child::{ChildSpec, Experiment};
use crate::cli::{LabArgs, LabCommand, LabCompareArgs, LabRunArgs};
use crate::engine;
use crate::{Done, Failure, Outcome};
use netceil_model::params::{LabIface, LabInfo, LoadParams, Params};
use std::net::SocketAddr;
use std::path::PathBuf;

/// The port the receiver listens on inside the lab (the lab's namespaces hold nothing else).
const PORT: u16 = 5201;

/// How long the receiver may live: longer than any bounded workload; it is stopped by its PID
/// as soon as the sender ends.
const RECV_LIMIT: &str = "6h";

fn lab_failure(e: netceil_lab::LabError) -> Failure {
    if e.is_usage() {
        Failure::usage(e)
    } else {
        Failure::from(e)
    }
}

/// The journal beside the store.
pub fn journal() -> Result<Journal, Failure> {
    let store = netceil_store::default_path().map_err(Failure::from)?;
    Ok(Journal::beside(&store))
}

/// Warns, at any netceil start, about changes a killed netceil left behind.
pub fn warn_if_stale() {
    let Ok(j) = journal() else { return };
    if !j.path().exists() {
        return;
    }
    match j.stale() {
        Ok(stale) if !stale.is_empty() => {
            eprintln!(
                "netceil: warning: a netceil that was killed left {} change(s) in place ({}); `netceil lab down --all` reverts them",
                stale.len(),
                stale
                    .iter()
                    .map(|p| p.change.describe())
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
        Ok(_) => {}
        Err(e) => eprintln!("netceil: warning: {e}"),
    }
}

fn need_root() -> Result<(), Failure> {
    if nix::unistd::geteuid().is_root() {
        Ok(())
    } else {
        Err(Failure::from(anyhow!(
            "the lab creates network namespaces, which needs root (or CAP_SYS_ADMIN and CAP_NET_ADMIN); run it with sudo"
        )))
    }
}

pub fn run(args: LabArgs) -> Outcome {
    match args.command {
        LabCommand::Up(a) => {
            need_root()?;
            let t = Topology::parse(&a.topology).map_err(lab_failure)?;
            let name = a.name.unwrap_or_else(|| t.name().to_string());
            let spec = LabSpec::new(&name, t, a.mtu).map_err(lab_failure)?;
            let j = journal()?;
            topo::up_persistent(&j, &spec).map_err(lab_failure)?;
            crate::outln!(
                "lab {name} is up: {} ({}), MTU {}",
                t.name(),
                t.path(),
                spec.mtu
            );
            print_spec(&spec);
            crate::outln!(
                "run across it: netceil lab run --name {name} -- run udp --size 64 --duration 10\ntake it down: netceil lab down {name}"
            );
            Ok(Done::Success)
        }
        LabCommand::Down(a) => {
            need_root()?;
            let j = journal()?;
            let t = if a.all {
                topo::down_all(&j).map_err(lab_failure)?
            } else {
                let name = a.name.ok_or_else(|| {
                    Failure::usage(anyhow!("lab down: give a lab's name, or --all"))
                })?;
                topo::down(&j, &name, a.force).map_err(lab_failure)?
            };
            print_teardown(&t, a.force);
            Ok(if t.recovery.failed.is_empty() {
                Done::Success
            } else {
                Done::Reported
            })
        }
        LabCommand::List => {
            let j = journal()?;
            let labs = topo::persistent_labs(&j).map_err(lab_failure)?;
            let others = if nix::unistd::geteuid().is_root() {
                topo::others(&j).map_err(lab_failure)?
            } else {
                Vec::new()
            };
            if labs.is_empty() && others.is_empty() {
                crate::outln!("no lab is up");
            }
            for l in &labs {
                crate::outln!(
                    "{}  {}  MTU {}  {}",
                    l.name,
                    l.topology.name(),
                    l.mtu,
                    if l.is_up() {
                        "up"
                    } else {
                        "namespaces gone (netceil lab down to forget it)"
                    }
                );
            }
            let stale = j.stale().map_err(lab_failure)?;
            if !stale.is_empty() {
                crate::outln!(
                    "left by a killed netceil: {}; `netceil lab down --all` reverts them",
                    stale
                        .iter()
                        .map(|p| p.change.describe())
                        .collect::<Vec<_>>()
                        .join("; ")
                );
            }
            for l in &others {
                crate::outln!("{}", describe_other(l));
            }
            Ok(Done::Success)
        }
        LabCommand::Run(a) => lab_run(a),
        LabCommand::Compare(a) => lab_compare(a),
    }
}

/// A lab that is not this store's (or that a running netceil of this store holds), with whose
/// it is and what `lab down` will do with it.
fn describe_other(l: &topo::HostLab) -> String {
    let what = if l.status.orphaned() {
        "`netceil lab down --all` removes it".to_string()
    } else {
        format!(
            "left alone by `lab down --all`; `netceil lab down {} --force` removes it",
            l.name
        )
    };
    format!(
        "lab {} ({}){}: {}; {what}",
        l.name,
        l.namespaces.join(", "),
        if l.this_store {
            ""
        } else {
            ", of another store"
        },
        l.status
    )
}

fn print_teardown(t: &topo::Teardown, forced: bool) {
    if let Some(l) = &t.removed {
        crate::outln!(
            "lab {}: {}; taken down{}",
            l.name,
            l.status,
            if forced { " (--force)" } else { "" }
        );
    }
    for x in &t.recovery.reverted {
        crate::outln!("reverted: {x}");
    }
    if t.recovery.reverted.is_empty() && t.recovery.failed.is_empty() {
        crate::outln!("nothing to revert");
    }
    for l in &t.left {
        crate::outln!("left alone: {}", describe_other(l));
    }
    for x in &t.recovery.failed {
        eprintln!("netceil: could not revert {x}");
    }
}

fn print_spec(spec: &LabSpec) {
    crate::outln!(
        "  sender    {} {} {}\n  receiver  {} {} {}",
        spec.ns_a,
        spec.iface_a,
        spec.addr_a,
        spec.ns_b,
        spec.iface_b,
        spec.addr_b
    );
    if let Some(m) = &spec.ns_m {
        crate::outln!("  middle    {m} {}", spec.middle_ifaces.join(" "));
    }
}

/// A workload for the lab, checked by netceil's own parser before anything is built, and
/// handed to the sender as a typed spec.
struct Workload {
    /// Its target is set to the lab's far end by [`Workload::experiment`].
    experiment: Experiment,
    common: crate::cli::CommonRunArgs,
    /// The far end's receive buffer, when the workload asks for one.
    rcvbuf: Option<(usize, bool)>,
    /// UDP frame size, for the packet-ceiling arithmetic.
    frame_bytes: Option<usize>,
}

fn workload(args: &[String]) -> Result<Workload, Failure> {
    if args.is_empty() {
        return Err(Failure::usage(anyhow!(
            "give the workload after --, e.g. `-- run udp --size 64 --duration 10`"
        )));
    }
    for owned in ["--to", "--json", "--no-store", "--ipv6", "--metrics-listen"] {
        if args
            .iter()
            .any(|a| a == owned || a.starts_with(&format!("{owned}=")))
        {
            return Err(Failure::usage(anyhow!(
                "{owned} in the workload: the lab sets the target and the output itself (give --json and --no-store to `lab` instead; IPv6 is off inside the lab)"
            )));
        }
    }
    let argv = std::iter::once("netceil".to_string()).chain(args.iter().cloned());
    let cli = <crate::cli::Cli as clap::Parser>::try_parse_from(argv).map_err(|e| {
        Failure::usage(anyhow!(
            "the workload `{}`: {}",
            args.join(" "),
            e.to_string().trim()
        ))
    })?;
    use crate::cli::Command as C;
    use crate::cli::{SearchWorkload as Se, SweepWorkload as Sw};
    let udp_buf = |u: &crate::cli::UdpArgs| u.rcvbuf.map(|b| (b, u.rcvbuf_force));
    let w = match cli.command {
        C::Run(r) => {
            let (rcvbuf, frame) = match &r.workload {
                Some(crate::cli::Workload::Udp(u)) => (
                    udp_buf(u),
                    engine::udp_payload(u, false, 64)
                        .ok()
                        .map(|p| netceil_model::udp_payload_to_frame(p, false)),
                ),
                _ => (None, None),
            };
            let experiment = match &r.workload {
                None => Experiment::Suite,
                Some(w) => Experiment::Run {
                    load: engine::load_params(w, &r.common)?,
                    confirm: r.confirm,
                },
            };
            Workload {
                experiment,
                common: r.common,
                rcvbuf,
                frame_bytes: frame,
            }
        }
        C::Sweep(s) => {
            let (experiment, rcvbuf) = match &s.workload {
                Sw::Udp(u) => (
                    Experiment::SweepUdp {
                        settings: engine::sweep_params(u, None),
                    },
                    u.rcvbuf.map(|b| (b, u.rcvbuf_force)),
                ),
                Sw::Tcp(t) => (
                    Experiment::SweepTcp {
                        settings: engine::sweep_tcp_params(t, &s.common),
                    },
                    None,
                ),
                Sw::Param(p) => (
                    Experiment::SweepParam {
                        params: p.params.clone(),
                        run: p.run.clone(),
                    },
                    None,
                ),
            };
            if matches!(&s.workload, Sw::Udp(u) if u.resume.is_some()) {
                return Err(Failure::usage(anyhow!(
                    "--resume in a lab's workload: resume the stored run outside the lab"
                )));
            }
            Workload {
                experiment,
                common: s.common,
                rcvbuf,
                frame_bytes: None,
            }
        }
        C::Search(s) => {
            let Se::Udp(u) = &s.workload;
            if u.resume.is_some() {
                return Err(Failure::usage(anyhow!(
                    "--resume in a lab's workload: resume the stored run outside the lab"
                )));
            }
            Workload {
                experiment: Experiment::Search {
                    settings: engine::search_params(u, None)?,
                },
                rcvbuf: u.rcvbuf.map(|b| (b, u.rcvbuf_force)),
                common: s.common,
                frame_bytes: None,
            }
        }
        _ => {
            return Err(Failure::usage(anyhow!(
                "the workload must be `run …`, `sweep …` or `search …`"
            )))
        }
    };
    Ok(w)
}

impl Workload {
    /// The experiment aimed at the lab's far end.
    fn experiment(&self, target: SocketAddr) -> Experiment {
        let to = Some(target.to_string());
        let mut e = self.experiment.clone();
        match &mut e {
            Experiment::Suite => {}
            Experiment::Run { load, .. } => match load {
                LoadParams::Udp(p) => p.target = to,
                LoadParams::Tcp(p) => p.target = to,
                LoadParams::Rr(p) => p.target = to,
            },
            Experiment::Search { settings } => settings.target = to,
            Experiment::SweepUdp { settings } => settings.target = to,
            Experiment::SweepTcp { settings } => settings.target = to,
            Experiment::SweepParam { run, .. } => {
                run.extend([
                    "--to".into(),
                    target.to_string(),
                    "--key-file".into(),
                    KEY_PATH.into(),
                ]);
            }
        }
        e
    }

    /// The sender's spec, its run going to `run_out`.
    fn spec(
        &self,
        target: SocketAddr,
        labels: &[(String, String)],
        quiet: bool,
        run_out: PathBuf,
    ) -> ChildSpec {
        let mut all = self.common.labels.clone();
        all.extend(labels.iter().cloned());
        ChildSpec {
            experiment: self.experiment(target),
            to: target,
            key_file: KEY_PATH.into(),
            sample_interval_s: self.common.sample_interval.as_secs_f64(),
            labels: all,
            probes: self
                .common
                .probes
                .as_ref()
                .map(|p| p.0.iter().map(|x| x.name()).collect::<Vec<_>>().join(",")),
            lock_stacks: self.common.lock_stacks,
            quiet: quiet || self.common.quiet,
            run_out,
        }
    }
}

/// Every lab interface's counters over time, read from this process.
struct NsSampler {
    readers: Vec<NsReader>,
    /// (unix time, netns, iface, counters)
    samples: Vec<(f64, String, netceil_lab::nsdev::NetDevRow)>,
}

impl NsSampler {
    fn start(spec: &LabSpec) -> Result<NsSampler, Failure> {
        let readers = spec
            .namespaces()
            .iter()
            .map(|ns| NsReader::start(ns))
            .collect::<Result<Vec<_>, _>>()
            .map_err(lab_failure)?;
        Ok(NsSampler {
            readers,
            samples: Vec::new(),
        })
    }

    fn sample(&mut self, spec: &LabSpec) {
        let now = netceil_engine::now_unix_s();
        for r in &self.readers {
            let Ok(nd) = r.read() else { continue };
            for row in nd.ifaces {
                let ours = spec
                    .interfaces()
                    .iter()
                    .any(|(ns, i)| *ns == r.netns && *i == row.iface);
                if ours {
                    self.samples.push((now, r.netns.clone(), row));
                }
            }
        }
    }

    /// Rates per interface into the run's rows (by time), and totals per interface.
    fn merge_into(&self, run: &mut Run) -> Vec<LabIface> {
        let start = run.meta.started_unix_s;
        let mut keys: Vec<(String, String)> = self
            .samples
            .iter()
            .map(|(_, ns, r)| (ns.clone(), r.iface.clone()))
            .collect();
        keys.sort();
        keys.dedup();
        let mut totals = Vec::new();
        for (ns, iface) in keys {
            let rows: Vec<_> = self
                .samples
                .iter()
                .filter(|(_, n, r)| *n == ns && r.iface == iface)
                .collect();
            for w in rows.windows(2) {
                let (t0, _, a) = w[0];
                let (t1, _, b) = w[1];
                let dt = t1 - t0;
                if dt <= 0.0 {
                    continue;
                }
                let t = t1 - start;
                let Some(row) = run.series.row_near(t) else {
                    continue;
                };
                let id = |name: &str| {
                    MetricId::new(name)
                        .with("netns", ns.as_str())
                        .with("iface", iface.as_str())
                };
                let rate = |x: u64, y: u64| y.saturating_sub(x) as f64 / dt;
                run.series.set_at(
                    row,
                    &id("lab_rx_packets_per_s"),
                    Unit::PacketsPerSecond,
                    rate(a.rx_packets, b.rx_packets),
                );
                run.series.set_at(
                    row,
                    &id("lab_tx_packets_per_s"),
                    Unit::PacketsPerSecond,
                    rate(a.tx_packets, b.tx_packets),
                );
                run.series.set_at(
                    row,
                    &id("lab_rx_bits_per_s"),
                    Unit::BitsPerSecond,
                    rate(a.rx_bytes, b.rx_bytes) * 8.0,
                );
                run.series.set_at(
                    row,
                    &id("lab_drops_per_s"),
                    Unit::PerSecond,
                    rate(a.rx_dropped + a.tx_dropped, b.rx_dropped + b.tx_dropped),
                );
            }
            if let (Some((_, _, first)), Some((_, _, last))) = (rows.first(), rows.last()) {
                totals.push(LabIface {
                    netns: ns.clone(),
                    iface: iface.clone(),
                    rx_packets: last.rx_packets.saturating_sub(first.rx_packets),
                    tx_packets: last.tx_packets.saturating_sub(first.tx_packets),
                    rx_bytes: last.rx_bytes.saturating_sub(first.rx_bytes),
                    rx_dropped: last.rx_dropped.saturating_sub(first.rx_dropped),
                    tx_dropped: last.tx_dropped.saturating_sub(first.tx_dropped),
                });
            }
        }
        totals
    }
}

fn self_exe() -> Result<String, Failure> {
    Ok(std::env::current_exe()
        .context("finding netceil's own executable")?
        .display()
        .to_string())
}

/// Stops a child we started, by its PID: SIGTERM, then SIGKILL after 3 s.
fn stop_child(child: &mut Child) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A child that is stopped (by its PID) however the scope is left.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        stop_child(&mut self.0);
    }
}

/// The lab's secret, shared by its two ends without a path in any file system: an anonymous,
/// sealed memory file (memfd) that each child gets as its standard input and reads as
/// `--key-file /proc/self/fd/0`. It vanishes with the last descriptor, so a `kill -9` of any
/// of the three processes leaves nothing behind, and nothing else can open it: not an
/// environment variable (every descendant inherits those, and they show in
/// /proc/PID/environ), and not a pipe (a single reader, and not a regular file).
struct LabKey(std::os::fd::OwnedFd);

/// What the children give as `--key-file`: their standard input.
const KEY_PATH: &str = "/proc/self/fd/0";

impl LabKey {
    fn new() -> Result<LabKey, Failure> {
        use nix::fcntl::{fcntl, FcntlArg, SealFlag};
        use nix::sys::memfd::{memfd_create, MFdFlags};
        let secret = [
            netceil_ctl::fresh_nonce().map_err(Failure::from)?,
            netceil_ctl::fresh_nonce().map_err(Failure::from)?,
        ]
        .concat();
        let fd = memfd_create(
            "netceil-lab-key",
            MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING,
        )
        .context("creating the lab's key (memfd_create)")?;
        let mut f = std::fs::File::from(fd);
        f.write_all(netceil_ctl::hex(&secret).as_bytes())
            .context("writing the lab's key")?;
        // Nobody changes it from now on, not even through /proc.
        fcntl(
            &f,
            FcntlArg::F_ADD_SEALS(
                SealFlag::F_SEAL_WRITE
                    | SealFlag::F_SEAL_SHRINK
                    | SealFlag::F_SEAL_GROW
                    | SealFlag::F_SEAL_SEAL,
            ),
        )
        .context("sealing the lab's key")?;
        Ok(LabKey(f.into()))
    }

    /// The key as a child's standard input (each child reopens it at its start).
    fn stdin(&self) -> Result<Stdio, Failure> {
        Ok(Stdio::from(
            self.0.try_clone().context("passing the lab's key")?,
        ))
    }
}

/// `netceil serve` in the receiver's namespace, listening at `target`, once it says so.
fn start_receiver(
    spec: &LabSpec,
    w: &Workload,
    target: &str,
    exe: &str,
    key: &LabKey,
) -> Result<Reaped, Failure> {
    let mut recv_args = vec![
        "netns".to_string(),
        "exec".into(),
        spec.ns_b.clone(),
        exe.to_string(),
        "serve".into(),
        "--listen".into(),
        target.to_string(),
        "--key-file".into(),
        KEY_PATH.into(),
        "--duration".into(),
        RECV_LIMIT.into(),
        // The lab's workloads are the user's own: the server's limits must not cut them.
        "--max-duration".into(),
        RECV_LIMIT.into(),
        "--max-flows".into(),
        "100000".into(),
        "--max-rate".into(),
        "1G".into(),
        "--max-bits".into(),
        "10000Gbit".into(),
        "--max-bytes".into(),
        "1000000G".into(),
    ];
    if let Some((bytes, force)) = w.rcvbuf {
        recv_args.extend(["--rcvbuf".into(), bytes.to_string()]);
        if force {
            recv_args.push("--rcvbuf-force".into());
        }
    }
    // `ip netns exec` execs the command: the PID we hold is the receiver's own.
    let mut recv = Reaped(
        Command::new("ip")
            .args(&recv_args)
            .env(crate::DIE_WITH_PARENT, std::process::id().to_string())
            .stdin(key.stdin()?)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting netceil serve in the lab")?,
    );
    // Ready when it says it listens (its first line).
    let mut first = String::new();
    if let Some(out) = recv.0.stdout.take() {
        let mut r = BufReader::new(out);
        r.read_line(&mut first)
            .context("reading the receiver's first line")?;
        // Keep draining its lines so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in r.lines() {});
    }
    if !first.contains("listening") {
        let mut err = String::new();
        if let Some(mut e) = recv.0.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut err);
        }
        return Err(Failure::from(anyhow!(
            "netceil serve did not start in {}: {}",
            spec.ns_b,
            err.trim()
        )));
    }
    Ok(recv)
}

/// Where a lab's sender writes its finished run: an anonymous memory file of this process,
/// which the sender opens as /proc/PID/fd/N. It vanishes with this process.
struct RunFile(std::fs::File);

impl RunFile {
    fn new() -> Result<RunFile, Failure> {
        use nix::sys::memfd::{memfd_create, MFdFlags};
        let fd = memfd_create("netceil-lab-run", MFdFlags::MFD_CLOEXEC)
            .context("creating the file for the sender's run (memfd_create)")?;
        Ok(RunFile(std::fs::File::from(fd)))
    }

    fn path(&self) -> PathBuf {
        use std::os::fd::AsRawFd;
        PathBuf::from(format!(
            "/proc/{}/fd/{}",
            std::process::id(),
            self.0.as_raw_fd()
        ))
    }

    /// What the sender wrote.
    fn read(&self) -> Result<Vec<u8>, Failure> {
        use std::io::{Read, Seek};
        let mut f = &self.0;
        f.seek(std::io::SeekFrom::Start(0))
            .context("reading the sender's run")?;
        let mut out = Vec::new();
        f.read_to_end(&mut out)
            .context("reading the sender's run")?;
        Ok(out)
    }
}

/// One workload across a lab: the receiver in b, the sender in a; the sender's run, with the
/// lab's interface series and labels added.
fn run_once(
    spec: &LabSpec,
    w: &Workload,
    labels: &[(String, String)],
    quiet: bool,
) -> Result<Run, Failure> {
    let exe = self_exe()?;
    let target = format!("{}:{PORT}", spec.addr_b);
    let target_addr: SocketAddr = target
        .parse()
        .with_context(|| format!("the lab's far end {target}"))?;
    // The lab's addresses are not loopback, so the two ends share a fresh secret.
    let key = LabKey::new()?;
    let recv = start_receiver(spec, w, &target, &exe, &key)?;
    let mut sampler = NsSampler::start(spec)?;
    // The sender's workload as a typed spec, and a memory file of ours for its run: the
    // child opens it through /proc, so nothing is written to disk and a kill -9 leaves
    // nothing behind.
    let run_file = RunFile::new()?;
    let child_spec = w.spec(target_addr, labels, quiet, run_file.path());
    let spec_json = serde_json::to_string(&child_spec).context("encoding the sender's spec")?;
    let mut sender = Reaped(
        Command::new("ip")
            .args(["netns", "exec", &spec.ns_a, &exe, "lab-child"])
            .env(crate::DIE_WITH_PARENT, std::process::id().to_string())
            .env(crate::child::SPEC_ENV, spec_json)
            .stdin(key.stdin()?)
            .stdout(Stdio::null())
            .stderr(if quiet {
                Stdio::piped()
            } else {
                Stdio::inherit()
            })
            .spawn()
            .context("starting the sender in the lab")?,
    );
    let err = sender.0.stderr.take();
    let err_reader = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut e) = err {
            let _ = std::io::Read::read_to_string(&mut e, &mut text);
        }
        text
    });
    sampler.sample(spec);
    let mut forwarded = false;
    let status = loop {
        if let Some(s) = sender.0.try_wait().context("waiting for the sender")? {
            break s;
        }
        // Ctrl-C on a terminal reaches the sender too (same process group); a SIGINT or
        // SIGTERM sent to this process alone is passed on, by the sender's PID. Either way it
        // stops by itself and prints what it measured.
        if crate::stop_flag().load(Ordering::SeqCst) && !forwarded {
            forwarded = true;
            if let Ok(pid) = i32::try_from(sender.0.id()) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::SIGINT,
                );
            }
        }
        let step = w.common.sample_interval.min(Duration::from_millis(200));
        let next = Instant::now() + w.common.sample_interval;
        while Instant::now() < next {
            if let Ok(Some(_)) = sender.0.try_wait() {
                break;
            }
            std::thread::sleep(step);
        }
        sampler.sample(spec);
    };
    sampler.sample(spec);
    drop(recv);
    let written = run_file.read()?;
    let stderr = err_reader.join().unwrap_or_default();
    if written.is_empty() {
        return Err(Failure::with_code(
            status.code().unwrap_or(1),
            anyhow!(
                "the workload failed in {} ({status}): {}",
                spec.ns_a,
                stderr.trim()
            ),
        ));
    }
    let mut run: Run = serde_json::from_slice(&written).context("reading the sender's run")?;
    let totals = sampler.merge_into(&mut run);
    let lab = LabInfo {
        name: spec.name.clone(),
        topology: spec.topology.name().into(),
        path: spec.topology.path().into(),
        mtu: spec.mtu,
        sender_netns: spec.ns_a.clone(),
        receiver_netns: spec.ns_b.clone(),
        middle_netns: spec.ns_m.clone(),
        interfaces: totals,
        knobs: labels
            .iter()
            .filter_map(|(k, v)| k.strip_prefix("knob.").map(|k| (k.to_string(), v.clone())))
            .collect(),
    };
    if let Some(w) = run.workload.as_mut() {
        let trial = std::mem::take(&mut w.params);
        w.params = Params::Lab {
            lab,
            trial: Box::new(trial),
        };
    }
    run.notes.push(format!(
        "lab {} ({}: {}): the sender ran in {}, netceil serve in {}; lab_*{{netns,iface}} series are every lab interface's counters",
        spec.name,
        spec.topology.name(),
        spec.topology.path(),
        spec.ns_a,
        spec.ns_b
    ));
    Ok(run)
}

/// Replaces the sender's stored run with the one carrying the lab's series.
fn restore_run(run: &Run, no_store: bool) -> Option<String> {
    if no_store {
        return None;
    }
    let store = crate::engine::open_store(false)?;
    let _ = store.delete(&run.run_id);
    match store.put_run(run) {
        Ok(()) => Some(run.run_id.clone()),
        Err(e) => {
            eprintln!("netceil: storing the lab run: {e}");
            None
        }
    }
}

/// One knob combination: (knob index, value) per knob.
type KnobStep = Vec<(usize, String)>;

/// The knobs' value combinations, in order (the first knob varies slowest).
fn knob_steps(knobs: &[Knob]) -> Vec<KnobStep> {
    let mut steps: Vec<KnobStep> = vec![vec![]];
    for (i, k) in knobs.iter().enumerate() {
        steps = steps
            .into_iter()
            .flat_map(|s| {
                k.values.iter().map(move |v| {
                    let mut s = s.clone();
                    s.push((i, v.clone()));
                    s
                })
            })
            .collect();
    }
    steps
}

/// A lab for one command: an existing one by name, or a new one torn down with the session.
fn lab_for(
    session: &mut Session,
    topology: Option<&str>,
    name: Option<&str>,
    mtu: u32,
    temp_name: &str,
) -> Result<LabSpec, Failure> {
    match (topology, name) {
        (None, Some(n)) => {
            let j = session.journal().clone();
            topo::persistent_labs(&j)
                .map_err(lab_failure)?
                .into_iter()
                .find(|l| l.name == n && l.is_up())
                .ok_or_else(|| {
                    Failure::usage(anyhow!(
                        "no lab '{n}' is up (`netceil lab up TOPO --name {n}` makes one)"
                    ))
                })
        }
        (Some(t), name) => {
            let t = Topology::parse(t).map_err(lab_failure)?;
            let spec = LabSpec::new(name.unwrap_or(temp_name), t, mtu).map_err(lab_failure)?;
            topo::up(session, &spec).map_err(lab_failure)?;
            Ok(spec)
        }
        (None, None) => Err(Failure::usage(anyhow!(
            "give a topology ({}) or --name of a lab that is up",
            Topology::ALL.map(Topology::name).join(", ")
        ))),
    }
}

/// The figures a knob step or a topology is judged by.
#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    pps: f64,
    bits_per_s: f64,
    loss: f64,
    cs_per_s: Option<f64>,
    intr_per_s: Option<f64>,
    cpu_ns_per_packet: Option<f64>,
    rx_packets: u64,
}

fn series_mean(run: &Run, name: &str) -> Option<f64> {
    let m = run.series.total(name)?;
    let v: Vec<f64> = m.values.iter().flatten().copied().collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn figures(run: &Run) -> Figures {
    let r = run
        .results
        .as_ref()
        .or_else(|| run.parts.iter().find_map(|p| p.results.as_ref()));
    let mut f = Figures::default();
    if let Some(r) = r {
        f.pps = r.rx_app_pps;
        f.bits_per_s = r.rx_app_bits_per_s;
        let sent = r.tx_packets.saturating_sub(r.in_flight_packets);
        f.loss = if sent > 0 {
            r.lost_packets as f64 / sent as f64
        } else {
            0.0
        };
        f.rx_packets = r.rx_app_packets;
    }
    f.cs_per_s = series_mean(run, "cs_per_s");
    f.intr_per_s = series_mean(run, "intr_per_s");
    // Packets the receiving interface took in, from the lab's own counters.
    let rx_iface = run.workload.as_ref().and_then(|w| w.lab()).and_then(|l| {
        l.interfaces
            .iter()
            .find(|i| i.netns == l.receiver_netns)
            .map(|i| i.rx_packets)
    });
    let busy = series_mean(run, "cpu_busy_pct");
    let cpus = run.meta.host.cpus.map(f64::from);
    let duration = run.series.t_s.last().copied();
    if let (Some(p), Some(b), Some(c), Some(d)) = (rx_iface, busy, cpus, duration) {
        if p > 0 {
            f.cpu_ns_per_packet = Some(b / 100.0 * c * d * 1e9 / p as f64);
        }
    }
    if f.pps == 0.0 {
        if let (Some(p), Some(d)) = (rx_iface, duration) {
            f.pps = p as f64 / d.max(1e-9);
        }
    }
    f
}

fn median(v: Vec<f64>) -> Option<f64> {
    netceil_model::stats::median(&v)
}

fn verdict_of(run: &Run) -> String {
    run.findings
        .first()
        .map(|f| format!("{}: {}", f.cause, f.summary))
        .unwrap_or_else(|| "no finding".into())
}

fn lab_run(a: LabRunArgs) -> Outcome {
    need_root()?;
    let w = workload(&a.workload)?;
    let knobs = a
        .knob
        .iter()
        .map(|k| knob::parse(k, a.allow_any_knob))
        .collect::<Result<Vec<_>, _>>()
        .map_err(lab_failure)?;
    if a.repeat == 0 {
        return Err(Failure::usage(anyhow!("--repeat: at least 1")));
    }
    let j = journal()?;
    let mut session = Session::new(j);
    let temp = format!("r{}", std::process::id());
    let spec = lab_for(
        &mut session,
        a.topology.as_deref(),
        a.name.as_deref(),
        a.mtu,
        &temp,
    )?;
    if !a.quiet {
        eprintln!(
            "lab {}: {} ({}), MTU {}",
            spec.name,
            spec.topology.name(),
            spec.topology.path(),
            spec.mtu
        );
    }
    let steps = knob_steps(&knobs);
    let mut results: Vec<(KnobStep, Vec<Run>)> = Vec::new();
    let mut interrupted = false;
    let outcome = (|| -> Result<(), Failure> {
        for step in &steps {
            // Back to the original values, then this step's.
            session.revert(|c| matches!(c, Change::File { .. } | Change::Coalesce { .. }));
            let mut labels = vec![
                ("lab.topology".to_string(), spec.topology.name().to_string()),
                ("lab.name".to_string(), spec.name.clone()),
            ];
            for (i, v) in step {
                let done = knob::apply(&mut session, &spec, &knobs[*i], v).map_err(lab_failure)?;
                if !a.quiet {
                    for d in done {
                        eprintln!("  knob: {d}");
                    }
                }
                labels.push((format!("knob.{}", knobs[*i].key), v.clone()));
            }
            let mut runs = Vec::new();
            for _ in 0..a.repeat {
                if crate::stop_flag().load(Ordering::SeqCst) {
                    interrupted = true;
                    break;
                }
                let mut run = run_once(&spec, &w, &labels, a.quiet)?;
                restore_run(&run, a.no_store);
                interrupted |= crate::stop_flag().load(Ordering::SeqCst);
                run.meta.labels.extend(labels.iter().cloned());
                runs.push(run);
            }
            results.push((step.clone(), runs));
            if interrupted {
                break;
            }
        }
        Ok(())
    })();
    // Every knob back and the lab down (unless it was an existing one), before any output.
    let problems = session.close();
    for p in &problems {
        eprintln!("netceil: {p}");
    }
    outcome?;
    let mut out = crate::out::stdout();
    if a.json {
        let doc = json!({
            "lab": { "name": spec.name, "topology": spec.topology.name(), "mtu": spec.mtu },
            "steps": results.iter().map(|(step, runs)| json!({
                "knobs": step.iter().map(|(i, v)| (knobs[*i].key.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
                "runs": runs,
            })).collect::<Vec<_>>(),
            "restored": problems.is_empty(),
        });
        serde_json::to_writer_pretty(&mut out, &doc).context("writing JSON")?;
        writeln!(out).context("writing to stdout")?;
    } else if knobs.is_empty() {
        for (_, runs) in &results {
            for run in runs {
                write!(out, "{}", crate::summary::render(run)).context("writing to stdout")?;
                write!(out, "{}", crate::summary::verdict(run)).context("writing to stdout")?;
                writeln!(out, "stored as {}", run.run_id).context("writing to stdout")?;
            }
        }
    } else {
        write!(out, "{}", knob_table(&knobs, &results)).context("writing to stdout")?;
    }
    if !problems.is_empty() {
        return Ok(Done::Reported);
    }
    Ok(Done::Success)
}

/// How throughput, cs/s and in/s moved with each knob value, and which value won.
fn knob_table(knobs: &[Knob], results: &[(KnobStep, Vec<Run>)]) -> String {
    let mut s = String::new();
    let keys: Vec<&str> = knobs.iter().map(|k| k.key.as_str()).collect();
    s.push_str(&format!(
        "{:<32} {:>12} {:>12} {:>8} {:>10} {:>10} {:>10}  verdict\n",
        keys.join(" "),
        "pkt/s",
        "Gbit/s",
        "loss %",
        "cs/s",
        "in/s",
        "CPU ns/pkt"
    ));
    let mut by_step: Vec<(String, Vec<f64>)> = Vec::new();
    for (step, runs) in results {
        let name = step
            .iter()
            .map(|(_, v)| v.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let fs: Vec<Figures> = runs.iter().map(figures).collect();
        let med = |f: &dyn Fn(&Figures) -> Option<f64>| median(fs.iter().filter_map(f).collect());
        let show = |x: Option<f64>, scale: f64, prec: usize| {
            x.map_or_else(|| "-".into(), |v| format!("{:.*}", prec, v / scale))
        };
        s.push_str(&format!(
            "{:<32} {:>12} {:>12} {:>8} {:>10} {:>10} {:>10}  {}\n",
            name,
            show(med(&|f| Some(f.pps)), 1.0, 0),
            show(med(&|f| Some(f.bits_per_s)), 1e9, 3),
            show(med(&|f| Some(f.loss * 100.0)), 1.0, 3),
            show(med(&|f| f.cs_per_s), 1.0, 0),
            show(med(&|f| f.intr_per_s), 1.0, 0),
            show(med(&|f| f.cpu_ns_per_packet), 1.0, 0),
            runs.first()
                .and_then(|r| r.findings.first())
                .map_or("-", |f| f.cause.as_str())
        ));
        by_step.push((name, fs.iter().map(|f| f.pps).collect()));
    }
    // The winner by median packet rate, against the runner-up with Welch's test.
    let mut ranked: Vec<&(String, Vec<f64>)> = by_step.iter().collect();
    ranked.sort_by(|a, b| {
        median(b.1.clone())
            .unwrap_or(0.0)
            .total_cmp(&median(a.1.clone()).unwrap_or(0.0))
    });
    if let [best, next, ..] = ranked.as_slice() {
        let conf = match netceil_report::welch_t_test(&next.1, &best.1, 0.95) {
            Ok(t) => format!(
                "mean {:+.1} % over {} (Welch p = {:.3}{})",
                t.difference / t.mean_a.max(1e-9) * 100.0,
                next.0,
                t.p_value,
                if t.p_value < 0.05 {
                    ", significant"
                } else {
                    ", not significant: repeat with more --repeat"
                }
            ),
            Err(e) => format!("no confidence: {e}; give --repeat 3 or more"),
        };
        s.push_str(&format!("best packet rate: {} ({conf})\n", best.0));
    }
    s.push_str("each value was set, measured, and the original restored afterwards\n");
    s
}

/// One topology's figures over the repeats.
struct TopoResult {
    spec: LabSpec,
    runs: Vec<Run>,
    ceiling_pps: Option<f64>,
}

fn lab_compare(a: LabCompareArgs) -> Outcome {
    need_root()?;
    let w = workload(&a.workload)?;
    let topologies = a
        .topologies
        .iter()
        .map(|t| Topology::parse(t))
        .collect::<Result<Vec<_>, _>>()
        .map_err(lab_failure)?;
    if topologies.len() < 2 {
        return Err(Failure::usage(anyhow!(
            "--topologies: at least two to compare, e.g. direct,bridge,routed"
        )));
    }
    if a.repeat == 0 {
        return Err(Failure::usage(anyhow!("--repeat: at least 1")));
    }
    let j = journal()?;
    let mut session = Session::new(j);
    let pid = std::process::id();
    let mut labs = Vec::new();
    for (i, t) in topologies.iter().enumerate() {
        labs.push(lab_for(
            &mut session,
            Some(t.name()),
            Some(&format!("c{pid}-{i}")),
            a.mtu,
            "",
        )?);
    }
    let mut results: Vec<TopoResult> = labs
        .into_iter()
        .map(|spec| TopoResult {
            spec,
            runs: Vec::new(),
            ceiling_pps: None,
        })
        .collect();
    let mut interrupted = false;
    let outcome = (|| -> Result<(), Failure> {
        for r in 0..a.repeat {
            // Alternate the order round by round, so that drift falls on every topology alike.
            let order: Vec<usize> = if r % 2 == 0 {
                (0..results.len()).collect()
            } else {
                (0..results.len()).rev().collect()
            };
            for i in order {
                if crate::stop_flag().load(Ordering::SeqCst) {
                    interrupted = true;
                    return Ok(());
                }
                let t = &mut results[i];
                if !a.quiet {
                    eprintln!(
                        "round {} of {}: {}",
                        r + 1,
                        a.repeat,
                        t.spec.topology.name()
                    );
                }
                let labels = vec![
                    (
                        "lab.topology".to_string(),
                        t.spec.topology.name().to_string(),
                    ),
                    ("lab.compare".to_string(), format!("c{pid}")),
                ];
                let run = run_once(&t.spec, &w, &labels, true)?;
                restore_run(&run, a.no_store);
                t.runs.push(run);
                if crate::stop_flag().load(Ordering::SeqCst) {
                    interrupted = true;
                    return Ok(());
                }
            }
        }
        // The packet ceiling of each path: 64-byte frames flat out, unless the workload is that.
        if !a.no_packet_ceiling {
            let small = workload(
                &[
                    "run",
                    "udp",
                    "--frame-size",
                    "64",
                    "--duration",
                    "3",
                    "--flows",
                    "2",
                ]
                .map(String::from),
            )?;
            for t in results.iter_mut() {
                if crate::stop_flag().load(Ordering::SeqCst) {
                    interrupted = true;
                    return Ok(());
                }
                if w.frame_bytes == Some(64) {
                    t.ceiling_pps = median(t.runs.iter().map(|r| figures(r).pps).collect());
                    continue;
                }
                let labels = vec![(
                    "lab.topology".to_string(),
                    t.spec.topology.name().to_string(),
                )];
                let run = run_once(&t.spec, &small, &labels, true)?;
                t.ceiling_pps = Some(figures(&run).pps);
            }
        }
        Ok(())
    })();
    let problems = session.close();
    for p in &problems {
        eprintln!("netceil: {p}");
    }
    outcome?;
    let report = compare_report(&results, w.frame_bytes, a.mtu);
    if let Some(path) = &a.html {
        let runs: Vec<Run> = results
            .iter()
            .filter_map(|t| median_run(&t.runs).cloned())
            .collect();
        std::fs::write(path, netceil_report::html_report(&runs))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let mut out = crate::out::stdout();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &report.json).context("writing JSON")?;
        writeln!(out).context("writing to stdout")?;
    } else {
        write!(out, "{}", report.text).context("writing to stdout")?;
        if let Some(path) = &a.html {
            writeln!(out, "report: {}", path.display()).context("writing to stdout")?;
        }
    }
    if !problems.is_empty() {
        return Ok(Done::Reported);
    }
    Ok(Done::Success)
}

/// The run whose packet rate is the median of its topology's repeats.
fn median_run(runs: &[Run]) -> Option<&Run> {
    let mut v: Vec<(f64, &Run)> = runs.iter().map(|r| (figures(r).pps, r)).collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v.get(v.len().saturating_sub(1) / 2).map(|x| x.1)
}

struct CompareReport {
    text: String,
    json: serde_json::Value,
}

fn compare_report(results: &[TopoResult], udp_frame: Option<usize>, mtu: u32) -> CompareReport {
    let frame = udp_frame.unwrap_or(mtu as usize + 18);
    let base = results
        .iter()
        .position(|t| t.spec.topology == Topology::Direct)
        .unwrap_or(0);
    let base_name = results[base].spec.topology.name();
    let mut text = format!(
        "{:<10} {:>12} {:>12} {:>8} {:>11} {:>26}  verdict (median run)\n",
        "topology",
        "pkt/s",
        "payload Gb/s",
        "loss %",
        "CPU ns/pkt",
        format!("added vs {base_name} ns/pkt"),
    );
    let mut rows = Vec::new();
    for t in results {
        let fs: Vec<Figures> = t.runs.iter().map(figures).collect();
        let pps = median(fs.iter().map(|f| f.pps).collect());
        let gbit = median(fs.iter().map(|f| f.bits_per_s / 1e9).collect());
        let loss = median(fs.iter().map(|f| f.loss * 100.0).collect());
        let cost = median(fs.iter().filter_map(|f| f.cpu_ns_per_packet).collect());
        // The extra cost per packet, paired by round: each round's run against the base's.
        let deltas: Vec<f64> = t
            .runs
            .iter()
            .zip(&results[base].runs)
            .filter_map(|(x, b)| {
                Some(figures(x).cpu_ns_per_packet? - figures(b).cpu_ns_per_packet?)
            })
            .collect();
        let added = median(deltas.clone());
        let spread = (
            deltas.iter().copied().fold(f64::INFINITY, f64::min),
            deltas.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        );
        let verdict = median_run(&t.runs).map(verdict_of).unwrap_or_default();
        let show =
            |x: Option<f64>, prec: usize| x.map_or_else(|| "-".into(), |v| format!("{v:.prec$}"));
        let added_text = match added {
            _ if std::ptr::eq(t, &results[base]) => "-".to_string(),
            Some(d) if deltas.len() > 1 => format!("{d:+.0} ({:+.0}..{:+.0})", spread.0, spread.1),
            Some(d) => format!("{d:+.0}"),
            None => "-".into(),
        };
        text.push_str(&format!(
            "{:<10} {:>12} {:>12} {:>8} {:>11} {:>26}  {}\n",
            t.spec.topology.name(),
            show(pps, 0),
            show(gbit, 3),
            show(loss, 3),
            show(cost, 0),
            added_text,
            verdict
        ));
        rows.push(json!({
            "topology": t.spec.topology.name(), "path": t.spec.topology.path(),
            "repeats": t.runs.len(), "pps": pps, "bits_per_s": gbit.map(|g| g * 1e9),
            "loss_pct": loss, "cpu_ns_per_packet": cost,
            "added_ns_per_packet": if std::ptr::eq(t, &results[base]) { None } else { added },
            "added_spread": (deltas.len() > 1).then_some([spread.0, spread.1]),
            "packet_ceiling_pps": t.ceiling_pps, "verdict": verdict,
            "runs": t.runs.iter().map(|r| r.run_id.clone()).collect::<Vec<_>>(),
        }));
    }
    text.push_str(&format!(
        "medians over {} repeat(s), topologies alternated round by round; CPU ns/pkt = host CPU busy time / packets the receiving interface took in; the added cost is paired by round against {base_name}, with its range\n",
        results.first().map_or(0, |t| t.runs.len())
    ));
    // The §2 arithmetic: the packet ceiling times the frame size against the bit rate reached.
    let mut arithmetic = Vec::new();
    for t in results {
        let Some(ceiling) = t.ceiling_pps else {
            continue;
        };
        // On the wire's terms: frames for UDP (packets × frame size), the payload rate for a
        // stream (whose segments the stack sizes itself).
        let reached = median(
            t.runs
                .iter()
                .map(|r| {
                    let f = figures(r);
                    if udp_frame.is_some() {
                        f.pps * frame as f64 * 8.0
                    } else {
                        f.bits_per_s
                    }
                })
                .collect(),
        )
        .unwrap_or(0.0);
        let allowed = ceiling * frame as f64 * 8.0;
        let binds = if reached > allowed * 1.05 {
            "more than the packet ceiling allows at this frame size: the stack carried aggregated packets (GSO/GRO), so the per-packet ceiling does not bind"
        } else if reached >= allowed * 0.8 {
            "the packet rate binds"
        } else {
            "something other than the packet rate binds first (per-byte work, the receiver, a lock)"
        };
        let line = format!(
            "{}: packet ceiling {:.0} pkt/s × {frame} B = {:.3} Gbit/s; reached {:.3} Gbit/s: {binds}",
            t.spec.topology.name(),
            ceiling,
            allowed / 1e9,
            reached / 1e9
        );
        text.push_str(&line);
        text.push('\n');
        arithmetic.push(json!({
            "topology": t.spec.topology.name(), "packet_ceiling_pps": ceiling, "frame_bytes": frame,
            "allowed_bits_per_s": allowed, "reached_bits_per_s": reached, "binds": binds,
        }));
    }
    CompareReport {
        text,
        json: json!({ "topologies": rows, "arithmetic": arithmetic, "base": base_name }),
    }
}
