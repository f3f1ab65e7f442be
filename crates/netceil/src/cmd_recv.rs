//! `netceil recv`: the far end for `netceil run … --to ADDR:PORT`.
//!
//! One port number, two protocols: the UDP receiver counts trains, answers their end-of-flow
//! reports and echoes requests; the TCP server sinks streams and echoes request/response
//! connections. Both stop on Ctrl-C or at --duration, and the totals are printed.

use anyhow::Context;
use serde_json::json;
use std::io::Write;
use std::sync::atomic::Ordering;

use crate::cli::RecvArgs;
use crate::{fmt, Failure};

pub fn run(args: RecvArgs) -> Result<u8, Failure> {
    let stop = crate::stop_flag();
    let listen = args.listen;
    let duration = args.duration;
    let tcp_stop = stop.clone();
    let tcp = std::thread::Builder::new()
        .name("recv-tcp".into())
        .spawn(move || netceil_load::tcp::serve_tcp(listen, &tcp_stop, duration))
        .context("starting the TCP server thread")?;
    if !args.json {
        println!("listening on {listen} (udp and tcp); Ctrl-C to stop");
    }
    let mut last = (0.0, 0u64, 0u64);
    let udp = netceil_load::udp::serve_udp(
        listen,
        args.rcvbuf,
        args.rcvbuf_force,
        &stop,
        duration,
        Some(crate::kernel::far_end_probe()),
        &mut |p| {
            let dt = (p.elapsed_s - last.0).max(1e-9);
            if !args.json && p.rx_packets > last.1 {
                println!(
                    "{:6.1}s  udp rx {:>10}  {:>12}  lost {}",
                    p.elapsed_s,
                    fmt::pps((p.rx_packets - last.1) as f64 / dt),
                    fmt::bits_per_s((p.rx_bytes - last.2) as f64 * 8.0 / dt),
                    fmt::count(p.lost_so_far)
                );
            }
            last = (p.elapsed_s, p.rx_packets, p.rx_bytes);
        },
    );
    // Whichever side ended first (a bind error, Ctrl-C, --duration), the other ends too.
    stop.store(true, Ordering::SeqCst);
    let tcp = tcp
        .join()
        .map_err(|_| anyhow::anyhow!("the TCP server thread panicked"))?;
    let udp = udp.map_err(crate::load_failure)?;
    let tcp = tcp.map_err(crate::load_failure)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        let flows: Vec<_> = udp
            .flows
            .iter()
            .map(|f| {
                json!({ "source": f.source.to_string(), "run_id": f.run_id, "flow": f.flow,
                        "received": f.received, "bytes": f.bytes, "lost": f.lost,
                        "reordered": f.reordered, "duplicates": f.duplicates,
                        "sender_count": f.sender_count })
            })
            .collect();
        let doc = json!({
            "udp": { "duration_s": udp.duration_s, "rx_packets": udp.rx_packets, "rx_bytes": udp.rx_bytes,
                     "lost": udp.lost, "reordered": udp.reordered, "duplicates": udp.duplicates,
                     "socket_drops": udp.socket_drops, "foreign_packets": udp.foreign_packets,
                     "requests_echoed": udp.requests_echoed, "rcvbuf_granted": udp.rcvbuf_granted,
                     "flows": flows, "notes": udp.notes },
            "tcp": { "duration_s": tcp.duration_s, "connections": tcp.connections,
                     "stream_connections": tcp.stream_connections, "echo_connections": tcp.echo_connections,
                     "rejected_connections": tcp.rejected_connections, "stream_bytes": tcp.stream_bytes,
                     "echoed_bytes": tcp.echoed_bytes },
        });
        serde_json::to_writer_pretty(&mut out, &doc).context("writing JSON")?;
        writeln!(out).context("writing to stdout")?;
    } else {
        writeln!(
            out,
            "udp: {} pkt, {} B from {} flow(s); lost {}, reordered {}, duplicate {}, socket drops {}, foreign {}, requests echoed {}",
            fmt::count(udp.rx_packets),
            fmt::count(udp.rx_bytes),
            udp.flows.len(),
            fmt::count(udp.lost),
            fmt::count(udp.reordered),
            fmt::count(udp.duplicates),
            udp.socket_drops.map_or("unknown".into(), fmt::count),
            fmt::count(udp.foreign_packets),
            fmt::count(udp.requests_echoed),
        )
        .context("writing to stdout")?;
        writeln!(
            out,
            "tcp: {} connection(s) ({} stream, {} echo, {} rejected), {} B sunk, {} B echoed",
            tcp.connections,
            tcp.stream_connections,
            tcp.echo_connections,
            tcp.rejected_connections,
            fmt::count(tcp.stream_bytes),
            fmt::count(tcp.echoed_bytes)
        )
        .context("writing to stdout")?;
        for n in &udp.notes {
            writeln!(out, "note: {n}").context("writing to stdout")?;
        }
    }
    Ok(0)
}
