//! The two netceil processes of a lab's workload, and what passes between them: `netceil
//! serve` in the receiving namespace, the sender (`netceil lab-child`, given a [`super::ChildSpec`])
//! in the sending one, a sealed memory file as their shared key, and a memory file of this
//! process for the sender's finished run. Each child is stopped by its PID however its scope
//! is left, and dies with this process (even after `kill -9`).

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use netceil_lab::topo::LabSpec;
use netceil_model::params::{LabInfo, Params};
use netceil_model::Run;

use super::sampler::NsSampler;
use super::spec::{Workload, DIE_WITH_PARENT, KEY_PATH, SPEC_ENV};
use super::Runner;
use crate::Error;

/// The port the receiver listens on inside the lab (the lab's namespaces hold nothing else).
const PORT: u16 = 5201;

/// How long the receiver may live: longer than any bounded workload; it is stopped by its PID
/// as soon as the sender ends.
const RECV_LIMIT: &str = "6h";

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

impl LabKey {
    fn new() -> Result<LabKey, Error> {
        use nix::fcntl::{fcntl, FcntlArg, SealFlag};
        use nix::sys::memfd::{memfd_create, MFdFlags};
        let secret = [netceil_ctl::fresh_nonce()?, netceil_ctl::fresh_nonce()?].concat();
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
    fn stdin(&self) -> Result<Stdio, Error> {
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
) -> Result<Reaped, Error> {
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
            .env(DIE_WITH_PARENT, std::process::id().to_string())
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
        return Err(Error::runtime(anyhow!(
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
    fn new() -> Result<RunFile, Error> {
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
    fn read(&self) -> Result<Vec<u8>, Error> {
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
impl Runner<'_> {
    pub fn run_once(
        &self,
        spec: &LabSpec,
        w: &Workload,
        labels: &[(String, String)],
        quiet: bool,
    ) -> Result<Run, Error> {
        let exe = self.exe.display().to_string();
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
                .env(DIE_WITH_PARENT, std::process::id().to_string())
                .env(SPEC_ENV, spec_json)
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
            if self.stop.load(Ordering::SeqCst) && !forwarded {
                forwarded = true;
                if let Ok(pid) = i32::try_from(sender.0.id()) {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::SIGINT,
                    );
                }
            }
            let step = w.sample_interval.min(Duration::from_millis(200));
            let next = Instant::now() + w.sample_interval;
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
            // A sender that exits 2 was given bad input; anything else failed at run time.
            let error = anyhow!(
                "the workload failed in {} ({status}): {}",
                spec.ns_a,
                stderr.trim()
            );
            return Err(if status.code() == Some(2) {
                Error::usage(error)
            } else {
                Error::runtime(error)
            });
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

    /// Replaces the sender's stored run with the one carrying the lab's series. A failed write
    /// is said on stderr, as the recording's are, and does not stop the campaign.
    pub fn store_run(&self, run: &Run) -> Option<String> {
        let store = self.store?;
        let _ = store.delete(&run.run_id);
        match store.put_run(run) {
            Ok(()) => Some(run.run_id.clone()),
            Err(e) => {
                eprintln!("netceil: storing the lab run: {e}");
                None
            }
        }
    }
}
