//! Streams the other way (`-R`) and both ways at once (`--bidir`), as iperf3 runs them.
//!
//! Reverse: this side connects and asks the far end to send ([`hello::Mode::Source`]); on
//! loopback the far end is an in-process server, so the roles swap within the process. The
//! goodput is what this side's application read. Both ways: the forward run and the reverse
//! run go at once, each on its own connections, and the results keep each direction's
//! figures apart ([`TcpDirectionResult`]) beside their sum.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use netceil_model::{FlowResult, GeneratorStats, Results, TcpDirection, TcpDirectionResult};

use super::rcvbuf::{self, Sizing};
use super::wakes::Batching;
use super::{hello, loopback, receiver, supervise, Meter, Server, TcpConfig, TcpProgress};
use crate::clock::{now_ns, ProgressTicks};
use crate::threads;
use crate::LoadError;

/// The down direction's byte counters as they run, for `--bidir`'s progress to read on the up
/// direction's clock: what the in-process server wrote (unknown with a far end) and what this
/// side read.
pub(crate) struct DownCounters {
    read: Vec<Arc<AtomicU64>>,
    written: Option<Arc<super::server::LiveCounters>>,
}

impl DownCounters {
    fn now(&self) -> (Option<u64>, Option<u64>) {
        let rx = self.read.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        let tx = self
            .written
            .as_ref()
            .map(|l| l.source_bytes.load(Ordering::Relaxed));
        (tx, Some(rx))
    }
}

/// Runs reverse streams: the far end (or the in-process server) sends, this side reads. With
/// `share`, the counters are put there once the flows start.
pub(crate) fn run_reverse(
    cfg: &TcpConfig,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&TcpProgress),
    share: Option<&Mutex<Option<DownCounters>>>,
) -> Result<Results, LoadError> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let threads = if cfg.threads == 0 { cpus } else { cfg.threads }.clamp(1, cfg.flows);
    // The in-process server sends here: its threads are the sending side (`--tx-cpu`).
    let server = match cfg.target {
        None => Some(Server::start_on(
            loopback(cfg.ipv6),
            threads as usize,
            cfg.tx_cpu,
            // It only sends: no sink stream to size or batch.
            super::server::Sinks {
                recv: super::RecvBuffer::Kernel,
                wakes: super::SinkWakes::Each,
            },
        )?),
        Some(_) => None,
    };
    let target = match (&server, cfg.target) {
        (Some(s), _) => s.local_addr(),
        (None, Some(t)) => t,
        (None, None) => unreachable!("a server is started without a target"),
    };
    // With a rate, the far end (or the in-process server) paces what it sends.
    let ask = match cfg.rate_per_flow_bps {
        Some(r) => hello::Ask::PacedSource {
            bits_per_s: (r.round() as u64).max(1),
        },
        None => hello::Ask::Plain(hello::Mode::Source),
    };
    // Sized before the hello: the far end sends nothing until it has answered.
    let mut sizing = Sizing::default();
    let mut sized = Vec::new();
    let streams = hello::connect_asking(target, cfg.flows, ask, |s| {
        let z = rcvbuf::apply(s, cfg.recv_buffer);
        sizing.add(z);
        sized.push(z);
        Ok(())
    })?;
    let mut shares: Vec<Vec<_>> = (0..threads).map(|_| Vec::new()).collect();
    for (id, (s, z)) in streams.into_iter().zip(sized).enumerate() {
        shares[id % threads as usize].push((id as u32, s, z));
    }
    let inner_stop = Arc::new(AtomicBool::new(false));
    let start_ns = now_ns() + 2_000_000;
    let deadline_ns = start_ns + cfg.duration.as_nanos() as u64;
    let mut counters = Vec::new();
    let mut handles = Vec::new();
    for (t, flows) in shares.into_iter().enumerate() {
        let rx_live = Arc::new(AtomicU64::new(0));
        counters.push(rx_live.clone());
        let plan = receiver::Plan {
            flows,
            start_ns,
            deadline_ns,
            stop: inner_stop.clone(),
            rx_live,
            wakes: cfg.sink_wakes,
        };
        let cpu = cfg.rx_cpu;
        handles.push(
            threads::spawn(format!("netceil-tcp-rrx{t}"), move || {
                threads::place(cpu)?;
                receiver::run(plan)
            })
            .map_err(|e| LoadError::Other(format!("cannot start a receiving thread: {e}")))?,
        );
    }
    let mut ticks = ProgressTicks::new(start_ns, deadline_ns + 500_000_000);
    let mut meter = Meter::new(start_ns, TcpDirection::Down);
    let live = DownCounters {
        read: counters,
        written: server.as_ref().map(Server::live_shared),
    };
    let read = || live.now();
    if let Some(share) = share {
        if let Ok(mut s) = share.lock() {
            *s = Some(DownCounters {
                read: live.read.clone(),
                written: live.written.clone(),
            });
        }
    }
    supervise(&handles, stop, &inner_stop, &mut ticks, |now| {
        on_progress(&meter.sample(now, read()))
    });
    let now = now_ns();
    if ticks.last_due(now) {
        on_progress(&meter.sample(now, read()));
    }
    let mut outcomes = Vec::new();
    for h in handles {
        match h.join() {
            Ok(r) => outcomes.push(r?),
            Err(_) => return Err(LoadError::Other("a TCP receiving thread panicked".into())),
        }
    }
    let sent = server
        .map(Server::stop)
        .transpose()?
        .map(|r| r.source_bytes);
    Ok(summarize_reverse(
        cfg,
        start_ns,
        outcomes,
        sent,
        &sizing,
        stop.load(Ordering::Relaxed),
    ))
}

fn summarize_reverse(
    cfg: &TcpConfig,
    start_ns: u64,
    outcomes: Vec<receiver::Outcome>,
    sent: Option<u64>,
    sizing: &Sizing,
    stopped_early: bool,
) -> Results {
    let recv_end = outcomes
        .iter()
        .map(|o| o.recv_end_ns)
        .max()
        .unwrap_or(start_ns);
    let last_data = outcomes
        .iter()
        .map(|o| o.last_data_ns)
        .max()
        .unwrap_or(start_ns);
    let send_window_s = recv_end.saturating_sub(start_ns).max(1) as f64 / 1e9;
    let rx_window_s = recv_end.max(last_data).saturating_sub(start_ns).max(1) as f64 / 1e9;
    let cpu_s = outcomes.iter().map(|o| o.cpu_ns).sum::<u64>() as f64 / 1e9;
    let mut wakes = Batching::default();
    for o in &outcomes {
        wakes.merge(&o.wakes);
    }
    let mut flows: Vec<_> = outcomes.into_iter().flat_map(|o| o.flows).collect();
    flows.sort_by_key(|f| f.flow);
    let rx_bytes: u64 = flows.iter().map(|f| f.rx_bytes).sum();
    let unended: Vec<u32> = flows.iter().filter(|f| !f.ended).map(|f| f.flow).collect();
    let mut notes = vec![format!(
        "reverse (-R): {} sent, this side read; goodput is what this side's application read \
         over the receive window of {rx_window_s:.3} s",
        if cfg.target.is_some() {
            "the far end (netceil serve)"
        } else {
            "an in-process server on loopback"
        }
    )];
    notes.extend(sizing.note(cfg.recv_buffer, "reading side"));
    notes.extend(wakes.note("reading side"));
    let rx_bits_per_s = rx_bytes as f64 * 8.0 / rx_window_s;
    if let Some(rate) = cfg.rate_per_flow_bps {
        let total = rate * f64::from(cfg.flows);
        notes.push(format!(
            "requested {rate:.0} bit/s per flow × {} flows = {total:.0} bit/s, paced by the \
             sending side ({}) on an absolute schedule per flow; this side read \
             {rx_bits_per_s:.0} bit/s ({:.2} % of it)",
            cfg.flows,
            if cfg.target.is_some() {
                "the far end"
            } else {
                "the in-process server"
            },
            rx_bits_per_s / total * 100.0
        ));
    }
    if let Some(first) = unended.first() {
        notes.push(format!(
            "{} reverse flows (first: {first}) did not end their stream in time: their bytes \
             are what was read until then",
            unended.len()
        ));
    }
    if let Some((flow, e)) = flows
        .iter()
        .find_map(|f| f.error.as_ref().map(|e| (f.flow, e)))
    {
        notes.push(format!("reverse flow {flow} failed: {e}"));
    }
    if sent.is_none() {
        notes.push(
            "what the far end wrote is its own count (far.app.tcp_source_bytes), not known here"
                .into(),
        );
    }
    if stopped_early {
        notes.push("stopped early on request; figures cover the time that ran".into());
    }
    let tx_bytes = sent.unwrap_or(0);
    Results {
        duration_s: send_window_s,
        tx_bytes,
        tx_bits_per_s: tx_bytes as f64 * 8.0 / send_window_s,
        rx_app_bytes: rx_bytes,
        rx_app_bits_per_s: rx_bits_per_s,
        tcp_rcvbuf_bytes: sizing.fixed_bytes(),
        generator: GeneratorStats {
            cpu_s,
            work_cpu_s: cpu_s,
            cpu_pct: cpu_s / send_window_s * 100.0,
            ..GeneratorStats::default()
        },
        flows: flows
            .iter()
            .map(|f| FlowResult {
                flow: f.flow,
                bytes: f.rx_bytes,
                bits_per_s: f.rx_bytes as f64 * 8.0 / rx_window_s,
                retransmits: None,
                segments_out: None,
                rtt_us: None,
            })
            .collect(),
        directions: vec![TcpDirectionResult {
            direction: TcpDirection::Down,
            flows: cfg.flows,
            tx_bytes: sent,
            rx_bytes,
            bits_per_s: rx_bits_per_s,
            retransmits: None,
        }],
        notes,
        ..Results::default()
    }
}

/// Runs both directions at once: `up` (this side sends) on the calling thread with the
/// progress, `down` (the far side sends) beside it.
pub(crate) fn run_both(
    cfg: &TcpConfig,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&TcpProgress),
) -> Result<Results, LoadError> {
    // The down direction's counters, read at each of the up direction's progress reports so
    // both directions' figures cover the same interval.
    let down_counters: Mutex<Option<DownCounters>> = Mutex::new(None);
    let mut down_meter: Option<Meter> = None;
    // Both directions stop on the caller's stop, and on the other direction's failure: a
    // direction that cannot connect ends the run at once instead of after the duration.
    let both = AtomicBool::new(false);
    let finished = AtomicBool::new(false);
    // Which direction failed first (1 up, 2 down): the other's error may be its consequence.
    let first = AtomicU8::new(0);
    let failed = |who: u8| {
        let _ = first.compare_exchange(0, who, Ordering::Relaxed, Ordering::Relaxed);
        both.store(true, Ordering::Relaxed);
    };
    let (up, down) = std::thread::scope(|s| {
        let watch = threads::spawn_scoped(s, "netceil-tcp-bidir".into(), || {
            while !finished.load(Ordering::Relaxed) {
                if stop.load(Ordering::Relaxed) {
                    both.store(true, Ordering::Relaxed);
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        let down = threads::spawn_scoped(s, "netceil-tcp-down".into(), || {
            let r = run_reverse(cfg, &both, &mut |_| {}, Some(&down_counters));
            if r.is_err() {
                failed(2);
            }
            r
        });
        let up = super::run_forward(cfg, &both, &mut |p| {
            let now = now_ns();
            let counts = down_counters
                .lock()
                .ok()
                .and_then(|c| c.as_ref().map(DownCounters::now));
            let down = counts.and_then(|counts| {
                let start = now.saturating_sub((p.elapsed_s * 1e9) as u64);
                let meter = down_meter.get_or_insert_with(|| Meter::new(start, TcpDirection::Down));
                meter.sample(now, counts).down
            });
            on_progress(&TcpProgress {
                down: Some(down.unwrap_or_default()),
                ..p.clone()
            })
        });
        if up.is_err() {
            failed(1);
        }
        let down = match down {
            Ok(h) => h
                .join()
                .unwrap_or_else(|_| Err(LoadError::Other("the down direction panicked".into()))),
            Err(e) => Err(LoadError::Other(format!(
                "cannot start the down direction: {e}"
            ))),
        };
        finished.store(true, Ordering::Relaxed);
        if let Ok(w) = watch {
            let _ = w.join();
        }
        (up, down)
    });
    match (up, down) {
        (Ok(up), Ok(down)) => Ok(combine(up, down, cfg.flows)),
        (_, Err(e)) if first.load(Ordering::Relaxed) == 2 => {
            Err(bidir_failed("down (the far side sends)", "up", e))
        }
        (Err(e), _) => Err(bidir_failed("up (this side sends)", "down", e)),
        (Ok(_), Err(e)) => Err(bidir_failed("down (the far side sends)", "up", e)),
    }
}

/// A `--bidir` run whose `failed` direction could not go on: which one, why, and that the
/// `other` was stopped. Errors of the user's input keep their kind (exit code 2).
fn bidir_failed(failed: &str, other: &str, e: LoadError) -> LoadError {
    if e.is_usage() {
        return e;
    }
    LoadError::Other(format!(
        "--bidir: the {failed} direction failed, so the {other} direction was stopped: {e}"
    ))
}

/// The two directions' results as one: totals summed, each direction's figures apart, the
/// down flows numbered after the up flows.
pub(crate) fn combine(up: Results, down: Results, flows: u32) -> Results {
    let up_dir = TcpDirectionResult {
        direction: TcpDirection::Up,
        flows,
        tx_bytes: Some(up.tx_bytes),
        rx_bytes: up.rx_app_bytes,
        bits_per_s: up.rx_app_bits_per_s,
        retransmits: up.flows.iter().map(|f| f.retransmits).sum(),
    };
    let mut all_flows = up.flows.clone();
    all_flows.extend(down.flows.iter().map(|f| FlowResult {
        flow: f.flow + flows,
        ..f.clone()
    }));
    let mut notes: Vec<String> = up.notes.iter().map(|n| format!("up: {n}")).collect();
    notes.extend(down.notes.iter().map(|n| format!("down: {n}")));
    notes.push(format!(
        "both directions at once (--bidir): flows 0–{} up (this side sends), {}–{} down (the \
         far side sends); the totals add both directions",
        flows - 1,
        flows,
        2 * flows - 1
    ));
    let mut directions = vec![up_dir];
    directions.extend(down.directions.iter().cloned());
    Results {
        duration_s: up.duration_s.max(down.duration_s),
        tx_bytes: up.tx_bytes + down.tx_bytes,
        tx_bits_per_s: up.tx_bits_per_s + down.tx_bits_per_s,
        rx_app_bytes: up.rx_app_bytes + down.rx_app_bytes,
        rx_app_bits_per_s: up.rx_app_bits_per_s + down.rx_app_bits_per_s,
        flows: all_flows,
        directions,
        notes,
        tcp_rcvbuf_bytes: up.tcp_rcvbuf_bytes.or(down.tcp_rcvbuf_bytes),
        ..up
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;
    use std::time::Duration;

    /// Each flow's rate, and the run: short, light (a few tens of Mbit/s), bounded in time.
    const RATE: f64 = 20e6;

    fn paced(direction: TcpDirection) -> TcpConfig {
        TcpConfig {
            flows: 2,
            rate_per_flow_bps: Some(RATE),
            duration: Duration::from_millis(1500),
            direction,
            ..TcpConfig::default()
        }
    }

    fn down(r: &Results) -> &TcpDirectionResult {
        r.directions
            .iter()
            .find(|d| d.direction == TcpDirection::Down)
            .expect("a down direction")
    }

    /// The far sender follows --rate-per-flow: -R and --bidir's down flows read within 10 % of
    /// what was asked (unpaced, loopback gives gigabits).
    #[test]
    fn the_far_side_paces_what_it_sends_with_reverse_and_both_ways() {
        let _one = netceil_testkit::machine_lock();
        let stop = AtomicBool::new(false);
        for way in [TcpDirection::Down, TcpDirection::Both] {
            let cfg = paced(way);
            let r = super::super::run_tcp(&cfg, &stop, &mut |_| {}).unwrap();
            let asked = RATE * f64::from(cfg.flows);
            let got = down(&r).bits_per_s;
            assert!(
                (0.9..=1.1).contains(&(got / asked)),
                "{way:?}: the down flows read {got:.0} bit/s, {asked:.0} asked; notes: {:#?}",
                r.notes
            );
            for f in r
                .flows
                .iter()
                .filter(|f| f.flow >= cfg.flows || way == TcpDirection::Down)
            {
                assert!(
                    (0.85..=1.15).contains(&(f.bits_per_s / RATE)),
                    "{way:?}: flow {} read {:.0} bit/s",
                    f.flow,
                    f.bits_per_s
                );
            }
        }
    }

    /// A far end that knows only version 1 hellos closes a paced one: the run is refused,
    /// saying why, rather than measured unpaced.
    #[test]
    fn an_older_far_end_refuses_paced_reverse_flows_clearly() {
        let old = TcpListener::bind("127.0.0.1:0").unwrap();
        let target = old.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            // As an older netceil: it reads 8 bytes, sees a version it does not know, closes.
            let (mut s, _) = old.accept().unwrap();
            let mut hello = [0u8; hello::HELLO_LEN];
            s.read_exact(&mut hello).unwrap();
            assert_eq!(hello::decode(&hello), None);
        });
        let cfg = TcpConfig {
            flows: 1,
            target: Some(target),
            ..paced(TcpDirection::Down)
        };
        let e = run_reverse(&cfg, &AtomicBool::new(false), &mut |_| {}, None).unwrap_err();
        server.join().unwrap();
        let msg = e.to_string();
        assert!(
            msg.contains("protocol version 2") && msg.contains("upgrade"),
            "{msg}"
        );
    }

    /// A far end that takes the up flows but closes the down flows' connections: --bidir
    /// fails at once, saying the down direction failed and why, and the up direction stops
    /// with it rather than running out its 10 s.
    #[test]
    fn bidir_fails_fast_when_the_down_direction_cannot_connect() {
        use std::io::Write;
        let far = TcpListener::bind("127.0.0.1:0").unwrap();
        let target = far.local_addr().unwrap();
        // Two connections: the up flow (Stream: acked, then drained) and the down flow
        // (Source: closed unanswered).
        let server = std::thread::spawn(move || {
            let mut drains = Vec::new();
            for _ in 0..2 {
                let (mut s, _) = far.accept().unwrap();
                let mut hello = [0u8; hello::HELLO_LEN];
                s.read_exact(&mut hello).unwrap();
                if let Some((hello::Mode::Stream, _)) = hello::decode(&hello) {
                    s.write_all(&hello).unwrap();
                    drains.push(std::thread::spawn(move || {
                        let mut buf = vec![0u8; 1 << 16];
                        s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
                        while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
                    }));
                }
            }
            for d in drains {
                d.join().unwrap();
            }
        });
        let cfg = TcpConfig {
            flows: 1,
            target: Some(target),
            duration: Duration::from_secs(10),
            rate_per_flow_bps: None,
            ..paced(TcpDirection::Both)
        };
        let started = std::time::Instant::now();
        let e = super::super::run_tcp(&cfg, &AtomicBool::new(false), &mut |_| {}).unwrap_err();
        let took = started.elapsed();
        server.join().unwrap();
        let msg = e.to_string();
        assert!(
            msg.contains("the down (the far side sends) direction failed")
                && msg.contains("the up direction was stopped")
                && msg.contains("closed the connection"),
            "{msg}"
        );
        assert!(took < Duration::from_secs(5), "it failed after {took:?}");
    }
}
