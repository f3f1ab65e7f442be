//! Metrics and workloads in words, for people: a chart legend reads "lo: received, bit/s",
//! not `iface_rx_bits_per_s{iface=lo}`, and a report opens with "UDP, 18-byte payloads,
//! unpaced, 1 flow, 3 s, loopback", not a parameter dump.

use netceil_model::params::{Params, RrParams, RrProtocol, TcpParams, UdpParams};
use netceil_model::{names as n, MetricId, Run, Unit};

/// What the metrics drawn most often measure, in a few words (without the unit).
const WORDS: &[(&str, &str)] = &[
    (n::LOAD_RX_BITS_PER_S, "received by the application"),
    (n::LOAD_TX_BITS_PER_S, "sent by the application"),
    (n::LOAD_RX_PPS, "received by the application"),
    (n::LOAD_TX_PPS, "sent by the application"),
    (n::LOAD_LOST_PER_S, "lost by the workload"),
    (n::LOAD_TRANSACTIONS_PER_S, "transactions"),
    (n::LOAD_MEAN_LATENCY_US, "mean request/response latency"),
    (n::IFACE_RX_BITS_PER_S, "received"),
    (n::IFACE_TX_BITS_PER_S, "sent"),
    (n::IFACE_RX_PPS, "received"),
    (n::IFACE_TX_PPS, "sent"),
    (n::IFACE_RX_DROPPED_PER_S, "dropped on receive"),
    (n::IFACE_TX_DROPPED_PER_S, "dropped on send"),
    (n::IFACE_RX_ERRORS_PER_S, "receive errors"),
    (n::IFACE_TX_ERRORS_PER_S, "send errors"),
    (n::IFACE_RX_MISSED_PER_S, "missed by the NIC"),
    (n::CS_PER_S, "context switches"),
    (n::INTR_PER_S, "interrupts"),
    (n::SOFTIRQ_NET_RX_PER_S, "NET_RX softirqs"),
    (n::SOFTIRQ_NET_TX_PER_S, "NET_TX softirqs"),
    (n::CPU_BUSY_PCT, "CPU busy"),
    (n::CPU_SYSTEM_PCT, "CPU in the kernel"),
    (n::CPU_SOFTIRQ_PCT, "CPU in softirqs"),
    (n::CPU_USER_PCT, "CPU in user mode"),
    (n::SOFTNET_DROPPED_PER_S, "dropped at the CPU backlog"),
    (n::SOFTNET_TIME_SQUEEZE_PER_S, "softirq budget ran out"),
    (n::UDP_RCVBUF_ERRORS_PER_S, "UDP receive buffer full"),
    (n::UDP_SNDBUF_ERRORS_PER_S, "UDP send buffer full"),
    (n::IP_IN_DISCARDS_PER_S, "IP input discards"),
    (n::TCP_RETRANS_SEGS_PER_S, "TCP segments retransmitted"),
    (n::TCP_BACKLOG_DROP_PER_S, "TCP backlog drops"),
    (n::ERLANG_SCHEDULER_UTIL_PCT, "Erlang schedulers busy"),
];

/// A metric name in words: the table above, else the first clause of its documentation,
/// else the name with its underscores as spaces.
fn name_words(name: &str) -> String {
    if let Some((_, w)) = WORDS.iter().find(|(k, _)| *k == name) {
        return (*w).to_string();
    }
    if let Some(doc) = n::doc_of(name) {
        let clause = doc
            .split([',', '(', '.', ';'])
            .next()
            .unwrap_or(doc)
            .trim()
            .trim_end_matches(" per second");
        if !clause.is_empty() {
            let mut c = clause.chars();
            return c.next().map_or_else(String::new, |f| {
                f.to_lowercase().chain(c).collect::<String>()
            });
        }
    }
    let base = name
        .strip_suffix("_per_s")
        .or_else(|| name.strip_suffix("_pct"))
        .or_else(|| name.strip_suffix("_bits"))
        .unwrap_or(name);
    base.replace('_', " ")
}

/// A metric with its labels and unit in words: `lo: received, bit/s`, `cpu3: CPU busy, %`,
/// `interrupts, /s (irq 45, queue 2)`. Any metric gets a readable legend, known or not.
pub fn metric(id: &MetricId, unit: Unit) -> String {
    let mut prefix = Vec::new();
    let mut rest = Vec::new();
    for (k, v) in &id.labels {
        match k.as_str() {
            n::LABEL_IFACE | n::LABEL_DEVICE => prefix.insert(0, v.clone()),
            n::LABEL_CPU => prefix.push(format!("cpu{v}")),
            _ => rest.push(format!("{} {v}", k.replace('_', " "))),
        }
    }
    let mut out = String::new();
    if !prefix.is_empty() {
        out.push_str(&prefix.join(" "));
        out.push_str(": ");
    }
    out.push_str(&name_words(&id.name));
    let unit = unit.human_symbol();
    if !unit.is_empty() {
        out.push_str(", ");
        out.push_str(unit);
    }
    if !rest.is_empty() {
        out.push_str(&format!(" ({})", rest.join(", ")));
    }
    out
}

/// `1 flow`, `3 flows`.
pub(crate) fn plural(n: usize, one: &str) -> String {
    format!("{n} {one}{}", if n == 1 { "" } else { "s" })
}

fn seconds(s: f64) -> String {
    netceil_model::fmt::value(s, Unit::Seconds)
}

fn place(target: &Option<String>) -> String {
    target
        .as_ref()
        .map_or_else(|| "loopback".into(), |t| format!("to {t}"))
}

/// Where a run's load went, for a sentence: `on loopback, to an in-process receiver`, `against
/// HOST at ADDR` (a far end that reported), `to ADDR`, `in lab NAME (bridge)`.
pub fn place_of(run: &Run) -> String {
    let far = run.results.as_ref().and_then(|r| r.far.as_ref());
    let params = run.workload.as_ref().map(|w| &w.params);
    if let Some(Params::Lab { lab, .. }) = params {
        return format!("in lab {} ({})", lab.name, lab.topology);
    }
    if let Some(f) = far {
        return format!("against {} at {}", f.host, f.address);
    }
    let target = match params {
        Some(Params::Udp(p)) => p.target.clone(),
        Some(Params::Tcp(p)) => p.target.clone(),
        Some(Params::Rr(p)) => p.target.clone(),
        _ => None,
    };
    match target {
        Some(t) => format!("to {t} (its far end sent no report)"),
        None => "on loopback, to an in-process receiver".into(),
    }
}

fn udp_words(p: &UdpParams) -> String {
    let mut parts = vec![
        "UDP".to_string(),
        format!("{}-byte payloads", p.payload_bytes),
        p.rate
            .map_or_else(|| "unpaced".into(), |r| format!("paced at {r}")),
        plural(p.flows as usize, "flow"),
    ];
    if p.threads > 1 {
        parts.push(plural(p.threads as usize, "thread"));
    }
    match p.count {
        Some(c) => parts.push(format!("{} packets", netceil_model::fmt::count(c))),
        None => parts.push(seconds(p.duration_s)),
    }
    if p.ipv6 {
        parts.push("IPv6".into());
    }
    parts.push(place(&p.target));
    parts.join(", ")
}

fn tcp_words(p: &TcpParams) -> String {
    let mut parts = vec![
        "TCP".to_string(),
        format!("{}-byte writes", p.msg_size),
        p.rate_per_flow_bps.map_or_else(
            || "unpaced".into(),
            |r| {
                format!(
                    "paced at {} per flow",
                    netceil_model::fmt::value(r, Unit::BitsPerSecond)
                )
            },
        ),
        plural(p.flows as usize, "flow"),
        seconds(p.duration_s),
    ];
    if p.ipv6 {
        parts.push("IPv6".into());
    }
    match p.direction {
        netceil_model::TcpDirection::Up => {}
        netceil_model::TcpDirection::Down => parts.push("reverse: the far side sends".into()),
        netceil_model::TcpDirection::Both => parts.push("both directions at once".into()),
    }
    parts.push(place(&p.target));
    parts.join(", ")
}

fn rrul_words(p: &netceil_model::params::RrulParams) -> String {
    let mut parts = vec![
        format!(
            "latency under load: a 64-byte UDP probe at {}/s, alone for {}, then beside {} each way for {}",
            p.rr_rate_tps,
            seconds(p.idle_s),
            plural(p.flows as usize, "bulk TCP flow"),
            seconds(p.duration_s)
        ),
    ];
    if let Some(r) = p.rate_per_flow_bps {
        parts.push(format!(
            "up flows paced at {} each",
            netceil_model::fmt::value(r, Unit::BitsPerSecond)
        ));
    }
    if p.ipv6 {
        parts.push("IPv6".into());
    }
    parts.push(place(&p.target));
    parts.join(", ")
}

fn rr_words(r: &RrParams) -> String {
    let proto = match r.proto {
        RrProtocol::Tcp => "TCP",
        RrProtocol::Udp => "UDP",
    };
    let mut parts = vec![
        format!("request/response over {proto}"),
        format!("{}-byte messages", r.size),
        r.rate_tps.map_or_else(
            || "as fast as answers come".into(),
            |t| netceil_model::fmt::value(t, Unit::PerSecond),
        ),
        plural(r.flows as usize, "flow"),
        seconds(r.duration_s),
    ];
    if r.ipv6 {
        parts.push("IPv6".into());
    }
    parts.push(place(&r.target));
    parts.join(", ")
}

/// The workload in one line of words, or `None` for a run without one.
pub fn workload(run: &Run) -> Option<String> {
    let w = run.workload.as_ref()?;
    Some(params_words(&w.params, run))
}

fn params_words(p: &Params, run: &Run) -> String {
    match p {
        Params::Udp(u) => udp_words(u),
        Params::Tcp(t) => tcp_words(t),
        Params::Rr(r) => rr_words(r),
        Params::Rrul(r) => rrul_words(r),
        Params::Suite(s) => format!(
            "a suite of {}: {}, {} each",
            plural(s.parts.len(), "workload"),
            s.parts.join(", "),
            seconds(s.part_duration_s)
        ),
        Params::Watch(w) => match &w.command {
            Some(c) => format!("watched while `{}` ran", c.join(" ")),
            None => "someone else's load, watched".into(),
        },
        Params::Search(p) => format!(
            "a search for the highest {} ({})",
            match p.kind {
                netceil_model::params::SearchKind::Udp(_) => "rate within a loss tolerance",
                netceil_model::params::SearchKind::Tcp(_) =>
                    "TCP goodput within a retransmit budget",
                netceil_model::params::SearchKind::Rr(_) =>
                    "request rate whose p99 round trip stays under a bound",
            },
            plural(run.parts.len(), "trial")
        ),
        Params::SearchTrial(t) => format!(
            "one search trial: UDP, {}-byte frames, {}",
            t.frame_bytes,
            t.rate_pps.map_or_else(
                || "unpaced".into(),
                |r| netceil_model::fmt::value(r, Unit::PacketsPerSecond)
            )
        ),
        Params::Sweep(_) | Params::SweepTcp(_) | Params::SweepParam(_) => {
            format!("a sweep ({})", plural(run.parts.len(), "cycle"))
        }
        Params::SweepCycle(c) => format!(
            "one sweep cycle: UDP, {}-byte payloads, {} packets {} apart",
            c.payload_bytes,
            c.count,
            netceil_model::fmt::value(c.interval_ns / 1e3, Unit::Microseconds)
        ),
        Params::Lab { lab, trial } => format!(
            "{}, in lab {} ({}: {})",
            params_words(trial, run),
            lab.name,
            lab.topology,
            lab.path
        ),
        Params::Other(_) => crate::summary::kind_or_source(run),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legends_are_words_with_units() {
        let lo = MetricId::new(n::IFACE_RX_BITS_PER_S).with(n::LABEL_IFACE, "lo");
        assert_eq!(metric(&lo, Unit::BitsPerSecond), "lo: received, bit/s");
        assert_eq!(
            metric(&MetricId::new(n::LOAD_RX_BITS_PER_S), Unit::BitsPerSecond),
            "received by the application, bit/s"
        );
        let cpu = MetricId::new(n::CPU_BUSY_PCT).with(n::LABEL_CPU, "3");
        assert_eq!(metric(&cpu, Unit::Percent), "cpu3: CPU busy, %");
        // Known to the model but not to the table: its documentation speaks.
        assert_eq!(
            metric(&MetricId::new(n::FORKS_PER_S), Unit::PerSecond),
            "processes and threads created, /s"
        );
        // Unknown to everyone: still no braces or underscores.
        let odd = MetricId::new("frob_widgets_per_s").with("queue_id", "2");
        assert_eq!(
            metric(&odd, Unit::PerSecond),
            "frob widgets, /s (queue id 2)"
        );
    }
}
