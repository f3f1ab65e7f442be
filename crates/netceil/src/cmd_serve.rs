//! `netceil serve` (and its old name, `recv`): the far end for `netceil run … --to`.

use anyhow::Context;
use netceil_ctl::{Admission, Key, Limits};
use std::io::Write;
use std::sync::Arc;

use crate::cli::ServeArgs;
use crate::{Done, Failure, Outcome};
use netceil_serve::{serve, HostSampler, ServeConfig, ServeTotals};

pub fn run(args: ServeArgs, deprecated_name: bool) -> Outcome {
    if deprecated_name {
        eprintln!(
            "netceil: `recv` is deprecated and will be removed; it now runs `netceil serve` (the same flags)"
        );
    }
    let key = match &args.key_file {
        Some(p) => Some(Key::from_file(p).map_err(Failure::usage)?),
        None => None,
    };
    if key.is_none() && !args.listen.ip().is_loopback() {
        return Err(Failure::usage(anyhow::anyhow!(
            "--listen {}: without --key-file, netceil serve listens on loopback only, since anyone who can reach it could ask for tests; give --key-file FILE (16 bytes or more, e.g. head -c 32 /dev/urandom | base64 > FILE) on both ends to serve other hosts",
            args.listen
        )));
    }
    let limits = Limits {
        max_flows: args.max_flows,
        max_tests: args.max_tests,
        max_pps: args.max_rate,
        max_bits_per_s: args.max_bits as u64,
        max_duration_ms: args.max_duration.as_millis().min(u128::from(u64::MAX)) as u64,
        max_bytes: args.max_bytes as u64,
        max_clients: args.max_clients,
        step_timeout_ms: args.step_timeout.as_millis().clamp(1, u128::from(u64::MAX)) as u64,
    };
    if limits.max_flows == 0 || limits.max_tests == 0 || limits.max_clients == 0 {
        return Err(Failure::usage(anyhow::anyhow!(
            "--max-flows, --max-tests and --max-clients must be at least 1"
        )));
    }
    let json = args.json;
    let say: netceil_serve::Say = Arc::new(move |line: String| {
        if json {
            eprintln!("{line}");
        } else {
            let mut out = crate::out::stdout();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    });
    let totals = Arc::new(ServeTotals::default());
    let source: Arc<dyn netceil_probe::Source + Send + Sync> =
        Arc::new(netceil_probe::ProcFs::new());
    let cfg = ServeConfig {
        listen: args.listen,
        key: key.clone(),
        admission: Admission::new(limits.max_clients),
        limits,
        duration: args.duration,
        rcvbuf: args.rcvbuf,
        rcvbuf_force: args.rcvbuf_force,
        source: source.clone(),
    };
    let stop = crate::stop_flag();
    let metrics = crate::metrics::from_flag(&args.metrics)?;
    let exporter = match &metrics {
        Some(m) => Some(export_host(m, totals.clone(), source)?),
        None => None,
    };
    let ready = {
        let say = say.clone();
        let keyed = key.is_some();
        move |addr: std::net::SocketAddr| {
            say(format!(
                "listening on {addr} (control: TCP; UDP datagrams to this port are counted, never answered); {}",
                if keyed {
                    "clients must prove the key (HMAC-SHA256)"
                } else {
                    "no --key-file: loopback clients only"
                }
            ))
        }
    };
    serve(cfg, stop, totals.clone(), say, ready).map_err(|e| match &e {
        // Not this machine's address: the user's input, as every address netceil is given.
        netceil_serve::Error::Bind { source, .. }
            if source.kind() == std::io::ErrorKind::AddrNotAvailable =>
        {
            Failure::usage(e)
        }
        _ => Failure::runtime(e),
    })?;
    if let Some(e) = exporter {
        e.stop();
    }
    if let Some(m) = metrics {
        crate::metrics::linger(m, args.metrics.metrics_linger);
    }
    let mut out = crate::out::stdout();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &totals.json()).context("writing JSON")?;
        writeln!(out).context("writing to stdout")?;
    } else {
        let t = totals.json();
        writeln!(
            out,
            "served: {} test(s) granted, {} completed; {} refused, {} failed authentication, {} timed out, {} malformed, {} closed before authenticating, {} turned away, {} displaced by newer connections (at most {} handshakes at once, {} from one host); strays: {} datagram(s) on the control port ({} more dropped by the kernel before they were read), {} on test ports (none answered)",
            t["tests_granted"], t["tests_completed"], t["refused"], t["auth_failures"],
            t["timed_out"], t["malformed"], t["closed_before_auth"], t["turned_away"], t["evicted"],
            t["peaks"]["handshakes"], t["peaks"]["handshakes_one_host"],
            t["port_strays"], t["port_stray_drops"], t["test_strays"]
        )
        .context("writing to stdout")?;
    }
    Ok(Done::Success)
}

/// Samples this host while serving and hands every row, with the server's totals, to the
/// OpenMetrics endpoint, which keeps a live verdict on them.
fn export_host(
    m: &netceil_metrics::MetricsServer,
    totals: Arc<ServeTotals>,
    source: Arc<dyn netceil_probe::Source + Send + Sync>,
) -> anyhow::Result<HostSampler> {
    let interval = std::time::Duration::from_secs(1);
    let publisher = m.publisher();
    let sampler = HostSampler::start(source, interval, totals, move |row| {
        publisher.update_row(row)
    })?;
    let (mut run, _) = netceil_engine::new_live_run(&[]);
    run.workload = None;
    m.analyze_live(netceil_metrics::LiveVerdict::new(run, interval));
    Ok(sampler)
}
