//! Interface counters of other network namespaces, read from this process.
//!
//! A thread that joins a namespace (setns) sees that namespace's /proc/net through
//! /proc/thread-self/net; one parked thread per namespace reads its /proc/net/dev on demand,
//! without starting a process per sample.

use std::sync::mpsc;
use std::thread::JoinHandle;

use crate::{LabError, Result};

pub use netceil_probe::parse::net_dev::{NetDev, NetDevRow};

type Reply = mpsc::Sender<std::result::Result<String, String>>;

/// A thread parked in a namespace, reading its /proc/net/dev when asked.
pub struct NsReader {
    pub netns: String,
    ask: Option<mpsc::Sender<Reply>>,
    thread: Option<JoinHandle<()>>,
}

impl NsReader {
    /// Starts a thread in namespace `netns` (by its `ip netns` name). Needs CAP_SYS_ADMIN.
    pub fn start(netns: &str) -> Result<NsReader> {
        let file = std::fs::File::open(format!("/run/netns/{netns}")).map_err(|e| {
            LabError::Unsupported(format!("namespace {netns}: /run/netns/{netns}: {e}"))
        })?;
        let (ask, asks) = mpsc::channel::<Reply>();
        let (ready_tx, ready_rx) = mpsc::channel();
        let name = netns.to_string();
        let thread = std::thread::Builder::new()
            .name(format!("ns-{netns}"))
            .spawn(move || {
                let joined = nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET)
                    .map_err(|e| format!("joining {name}: {e}"));
                let failed = joined.is_err();
                let _ = ready_tx.send(joined);
                if failed {
                    return;
                }
                for reply in asks {
                    let text = std::fs::read_to_string("/proc/thread-self/net/dev")
                        .map_err(|e| e.to_string());
                    let _ = reply.send(text);
                }
            })
            .map_err(|e| LabError::Unsupported(format!("a thread for {netns}: {e}")))?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(NsReader {
                netns: netns.to_string(),
                ask: Some(ask),
                thread: Some(thread),
            }),
            Ok(Err(e)) => Err(LabError::Unsupported(e)),
            Err(_) => Err(LabError::Unsupported(format!(
                "the thread for {netns} ended before it joined"
            ))),
        }
    }

    /// The namespace's interface counters now.
    pub fn read(&self) -> Result<NetDev> {
        let (tx, rx) = mpsc::channel();
        let gone = || LabError::Unsupported(format!("the reader of {} ended", self.netns));
        self.ask
            .as_ref()
            .ok_or_else(gone)?
            .send(tx)
            .map_err(|_| gone())?;
        let text = rx
            .recv()
            .map_err(|_| gone())?
            .map_err(|e| LabError::Unsupported(format!("{}: /proc/net/dev: {e}", self.netns)))?;
        netceil_probe::parse::net_dev::parse(&text)
            .map_err(|e| LabError::Unsupported(format!("{}: /proc/net/dev: {e}", self.netns)))
    }
}

impl Drop for NsReader {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop.
        self.ask.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
