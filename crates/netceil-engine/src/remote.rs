//! The client side of `--to`: asks a `netceil serve` for a test over its control connection,
//! points the load at the granted data port, and brings the far end's report into the run.

use anyhow::anyhow;
use netceil_ctl::{
    fresh_nonce, hex, read_frame, unhex, write_frame, ClientMsg, FrameError, Grant, GroAnswer, Key,
    ServerMsg, TcpRcvbuf, TestKind, TestSpec, MAX_SERVER_FRAME, MIN_HELLO_FRAME, NONCE_LEN, PROTO,
};
use netceil_load::{rr, tcp, udp};
use netceil_model::{FarEnd, Results};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::Error as Failure;
use netceil_ctl::{MAC_GRANT, MAC_REQUEST};

/// How long connecting and each handshake step may take.
const STEP: Duration = Duration::from_secs(5);
/// How long the far end may take to stop its receiver, sampler and send the report.
const REPORT_WAIT: Duration = Duration::from_secs(15);

/// A granted test on a `netceil serve`.
pub struct FarSession {
    stream: TcpStream,
    control: SocketAddr,
    grant: Grant,
    /// The request asked for UDP GRO at the far end.
    asked_gro: bool,
}

impl FarSession {
    /// Connects, proves the key if the server asks, and asks for `spec`. Refusals, version
    /// skew and a wrong key are usage errors (exit 2) with the server's reason.
    pub fn open(
        control: SocketAddr,
        key: Option<&Key>,
        spec: TestSpec,
    ) -> Result<FarSession, Failure> {
        let mut stream = TcpStream::connect_timeout(&control, STEP).map_err(|e| {
            Failure::runtime(anyhow!(
                "--to {control}: cannot reach a netceil serve there ({e}); start one with `netceil serve --listen {control}`"
            ))
        })?;
        let _ = stream.set_nodelay(true);
        stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .map_err(Failure::runtime)?;
        stream
            .set_write_timeout(Some(STEP))
            .map_err(Failure::runtime)?;
        let cn = fresh_nonce().map_err(Failure::runtime)?;
        let hello = |pad: usize| ClientMsg::Hello {
            proto: PROTO,
            netceil: env!("CARGO_PKG_VERSION").into(),
            nonce: hex(&cn),
            pad: "-".repeat(pad),
        };
        // Pad the hello to the size the server answers (it never answers with more).
        let bare = netceil_ctl::encode(&hello(0))
            .map_err(Failure::runtime)?
            .len();
        let msg = hello(MIN_HELLO_FRAME.saturating_sub(bare));
        let ctx =
            |what: &str, e: FrameError| Failure::runtime(anyhow!("--to {control}: {what}: {e}"));
        write_frame(&mut stream, &msg).map_err(|e| ctx("sending the hello", e))?;
        let (sn, key_required) = match read_server(&mut stream, control, "the challenge")? {
            ServerMsg::Challenge {
                proto,
                netceil,
                nonce,
                key_required,
            } => {
                if proto != PROTO {
                    return Err(Failure::usage(anyhow!(
                        "--to {control}: version skew: the server (netceil {netceil}) speaks control protocol {proto}, this client (netceil {}) speaks {PROTO}; run the same netceil release on both ends",
                        env!("CARGO_PKG_VERSION")
                    )));
                }
                let sn = unhex(&nonce)
                    .and_then(|v| <[u8; NONCE_LEN]>::try_from(v).ok())
                    .ok_or_else(|| anyhow!("--to {control}: a malformed challenge"))?;
                (sn, key_required)
            }
            other => return Err(unexpected(control, "a challenge", other)),
        };
        let mac = match (key_required, key) {
            (true, None) => {
                return Err(Failure::usage(anyhow!(
                "--to {control}: the server requires a key; give --key-file FILE with its secret"
            )))
            }
            (true, Some(k)) => {
                let body = serde_json::to_vec(&spec).map_err(Failure::runtime)?;
                Some(hex(&k.mac(MAC_REQUEST, &[&cn, &sn, &body])))
            }
            (false, _) => None,
        };
        let asked_gro = spec.gro;
        write_frame(&mut stream, &ClientMsg::Request { test: spec, mac })
            .map_err(|e| ctx("sending the request", e))?;
        let grant = match read_server(&mut stream, control, "the grant") {
            Ok(ServerMsg::Grant(g)) => g,
            Ok(other) => return Err(unexpected(control, "a grant", other)),
            Err(e) if asked_gro => {
                return Err(Failure {
                    kind: e.kind,
                    error: e.error.context(
                        "--gro asks the far end for UDP GRO: a netceil serve older than this client does not know the request and closes it",
                    ),
                })
            }
            Err(e) => return Err(e),
        };
        if let Some(k) = key.filter(|_| key_required) {
            let ok = grant.mac.as_deref().is_some_and(|m| {
                k.verify(
                    MAC_GRANT,
                    &[
                        &cn,
                        &sn,
                        &grant.test_id.to_be_bytes(),
                        &grant.data_port.to_be_bytes(),
                    ],
                    m,
                )
            });
            if !ok {
                return Err(Failure::runtime(anyhow!(
                    "--to {control}: the server's grant does not prove the key: not the server you meant, or another key"
                )));
            }
        }
        Ok(FarSession {
            stream,
            control,
            grant,
            asked_gro,
        })
    }

    /// What the grant says that changes what is measured: whether the far end reads with
    /// UDP GRO as asked.
    pub fn notes(&self) -> Vec<String> {
        match (&self.grant.gro, self.asked_gro) {
            (_, false) => vec![],
            (Some(GroAnswer::On), true) => vec![
                "GRO CHANGES WHAT IS MEASURED at the far end: its data socket read with UDP_GRO on, cutting coalesced reads into datagrams counted one by one (far.app.udp_gro_reads and udp_gro_datagrams say how many); the cost of one read per datagram is not measured there".into(),
            ],
            (Some(GroAnswer::Refused { reason }), true) => vec![format!(
                "--gro: the far end could not turn on UDP GRO ({reason}); it read one datagram per message, as without --gro"
            )],
            (None, true) => vec![
                "--gro: the far end did not say whether it read with UDP GRO; take it as off".into(),
            ],
        }
    }

    /// Where the test's data goes.
    pub fn data_addr(&self) -> SocketAddr {
        SocketAddr::new(self.control.ip(), self.grant.data_port)
    }

    /// Says the load is over and reads the far end's report.
    pub fn finish(mut self) -> anyhow::Result<FarEnd> {
        write_frame(&mut self.stream, &ClientMsg::Done {})
            .map_err(|e| anyhow!("--to {}: sending done: {e}", self.control))?;
        let (msg, _) = read_frame::<ServerMsg>(
            &mut self.stream,
            MAX_SERVER_FRAME,
            Instant::now() + REPORT_WAIT,
        )
        .map_err(|e| anyhow!("--to {}: reading the far end's report: {e}", self.control))?;
        match msg {
            ServerMsg::Report(far) => Ok(*far),
            ServerMsg::Refused { reason, .. } => Err(anyhow!("--to {}: {reason}", self.control)),
            _ => Err(anyhow!(
                "--to {}: a message out of order instead of the report",
                self.control
            )),
        }
    }
}

fn read_server(
    stream: &mut TcpStream,
    control: SocketAddr,
    what: &str,
) -> Result<ServerMsg, Failure> {
    let (msg, _) = read_frame::<ServerMsg>(stream, MAX_SERVER_FRAME, Instant::now() + STEP)
        .map_err(|e| {
            Failure::runtime(anyhow!(
                "--to {control}: waiting for {what}: {e}; is a netceil serve listening there?"
            ))
        })?;
    if let ServerMsg::Refused { reason, .. } = &msg {
        return Err(Failure::usage(anyhow!(
            "--to {control}: the server said: {reason}"
        )));
    }
    Ok(msg)
}

fn unexpected(control: SocketAddr, wanted: &str, got: ServerMsg) -> Failure {
    let name = match got {
        ServerMsg::Challenge { .. } => "a challenge",
        ServerMsg::Refused { .. } => "a refusal",
        ServerMsg::Grant(_) => "a grant",
        ServerMsg::Report(_) => "a report",
    };
    Failure::runtime(anyhow!(
        "--to {control}: {name} came where {wanted} was due"
    ))
}

fn millis(d: Duration) -> u64 {
    d.as_millis().clamp(1, u128::from(u64::MAX)) as u64
}

fn sample_ms(interval: Duration) -> u32 {
    interval.as_millis().clamp(100, 60_000) as u32
}

/// The test a UDP train asks for.
pub fn udp_spec(cfg: &udp::UdpConfig, interval: Duration) -> TestSpec {
    TestSpec {
        kind: TestKind::Udp,
        flows: cfg.flows,
        duration_ms: millis(cfg.duration),
        payload_bytes: cfg.payload_bytes.min(u32::MAX as usize) as u32,
        rate_pps: cfg.requested_pps().map(|p| p.ceil() as u64),
        rate_bits_per_s: None,
        run_id: cfg.run_id,
        sample_ms: sample_ms(interval),
        gro: cfg.gro,
        tcp_rcvbuf: None,
        tcp_wake_each: false,
    }
}

/// The test TCP streams ask for: both directions' connections with `--bidir`.
pub fn tcp_spec(cfg: &tcp::TcpConfig, interval: Duration) -> TestSpec {
    let ways = match cfg.direction {
        netceil_model::TcpDirection::Both => 2,
        _ => 1,
    };
    TestSpec {
        kind: TestKind::Tcp,
        flows: cfg.flows.saturating_mul(ways),
        duration_ms: millis(cfg.duration),
        payload_bytes: cfg.msg_size.min(u32::MAX as usize) as u32,
        rate_pps: None,
        // Every flow is paced, both ways with --bidir (the far end paces its own).
        rate_bits_per_s: cfg
            .rate_per_flow_bps
            .map(|b| (b * f64::from(cfg.flows) * f64::from(ways)).ceil() as u64),
        run_id: 0,
        sample_ms: sample_ms(interval),
        gro: false,
        // An explicit --rcvbuf goes to the far end; its default is sized for the far host.
        tcp_rcvbuf: match cfg.recv_buffer {
            tcp::RecvBuffer::Kernel => Some(TcpRcvbuf::Kernel),
            tcp::RecvBuffer::Fixed(n) => Some(TcpRcvbuf::Bytes(n as u64)),
            tcp::RecvBuffer::Auto { .. } => None,
        },
        tcp_wake_each: cfg.sink_wakes == tcp::SinkWakes::Each,
    }
}

/// The test a request/response workload asks for.
pub fn rr_spec(cfg: &rr::RrConfig, run_id: u16, interval: Duration) -> TestSpec {
    TestSpec {
        kind: match cfg.proto {
            rr::RrProto::Udp => TestKind::RrUdp,
            rr::RrProto::Tcp => TestKind::RrTcp,
        },
        flows: cfg.flows,
        duration_ms: millis(cfg.duration),
        payload_bytes: cfg.size.min(u32::MAX as usize) as u32,
        rate_pps: cfg.rate_tps.map(|r| r.ceil() as u64),
        rate_bits_per_s: None,
        run_id,
        sample_ms: sample_ms(interval),
        gro: false,
        tcp_rcvbuf: None,
        tcp_wake_each: false,
    }
}

/// What the far end wrote on the connections that asked it to send, from its report, into
/// the down direction's figures.
pub fn far_sent(results: &mut Results) {
    let Some(sent) = results.far.as_ref().map(|f| f.app.tcp_source_bytes) else {
        return;
    };
    for d in &mut results.directions {
        if d.direction == netceil_model::TcpDirection::Down && d.tx_bytes.is_none() {
            d.tx_bytes = Some(sent);
        }
    }
}

/// Keeps the far end's report in the results, with a note on what it says. `near_t0_s` is the
/// run's series time at which the grant arrived, where the far end's clock starts.
pub fn attach(results: &mut Results, far: anyhow::Result<FarEnd>, near_t0_s: f64) {
    match far {
        Ok(mut far) => {
            far.near_t0_s = Some(near_t0_s);
            results.notes.push(format!(
                "the far end ({}, {} at {}) reported its own counts, kernel counter deltas, CPU per core and a {}-row series; the test there was ended by {}",
                far.host,
                far.netceil_version,
                far.address,
                far.series.t_s.len(),
                far.ended_by
            ));
            // What the far end said about how it measured, where the run's notes are read.
            results
                .notes
                .extend(far.notes.iter().map(|n| format!("far end: {n}")));
            results.far = Some(Box::new(far));
        }
        Err(e) => results
            .notes
            .push(format!("the far end's report did not arrive: {e:#}")),
    }
}
