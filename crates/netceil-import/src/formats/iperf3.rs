//! iperf3 `--json` results (client or server side, TCP or UDP, `-P`, `-R`, `--bidir`) mapped
//! onto the same [`Results`] and series names as netceil's own runs.
//!
//! The document has `start` (`test_start`: protocol, blksize, num_streams, duration, reverse;
//! `connected[]`, `timestamp`, `system_info`), `intervals[]` (each with `streams[]` and `sum`,
//! plus `sum_bidir_reverse` with `--bidir`) and `end` (`streams[]`, `sum_sent`/`sum_received`,
//! their `_bidir_reverse` twins, `cpu_utilization_percent`; for UDP also `sum`). Versions
//! differ (3.0–3.1 have no `sender` flags, and UDP only `end.sum`), so every field is optional
//! and read from a [`Value`]. `--json-stream` output (one `{"event": …}` per line, iperf ≥ 3.17)
//! is read too.
//!
//! Mapping:
//! - `results` is the client→server direction (server→client with `-R`): `tx_*` from the
//!   sender's sum, `rx_app_*` from the receiver's; for UDP the receiver's `packets` is the
//!   sender's sequence count, so `rx_app_packets = packets − lost_packets`, `lost_packets` is
//!   what the receiver found missing, and packets sent after the last one that arrived are
//!   `in_flight_packets`. `payload_bytes` is the UDP block size. `flows[]` are the streams.
//!   With `--bidir` the other direction is `parts[0]`, a Run of its own.
//! - The series has one row per interval, ending at the interval's `end`: from the local
//!   host's point of view a sending sum gives `load_tx_bits_per_s` (and `load_tx_pps` for UDP),
//!   a receiving one `load_rx_bits_per_s`, `load_rx_pps`, `load_lost_per_s` and
//!   `iperf3_jitter_us`; senders' retransmits give `iperf3_retransmits_per_s`. Per stream, with
//!   a `flow` label: the same rates when there are several streams, and TCP `iperf3_rtt_us`
//!   and `iperf3_snd_cwnd_bytes`. `-O` omitted intervals are left out, as iperf3 does.
//! - What iperf3 writes as 0 because that side could not know it (a server's copy of the
//!   sender's totals) is not taken as a measurement; the notes say what was done instead.
//!
//! An `{"error": "…"}` document is an [`ImportError`] carrying iperf3's message; a test that
//! failed after some intervals imports those, marked incomplete. A document cut short is
//! closed after its last complete value and imported with a warning.

use serde_json::{Map, Value};

use netceil_model::names::{
    IPERF3_JITTER_US, IPERF3_RETRANSMITS_PER_S, IPERF3_RTT_US, IPERF3_SND_CWND_BYTES,
    LOAD_LOST_PER_S, LOAD_RX_BITS_PER_S, LOAD_RX_PPS, LOAD_TX_BITS_PER_S, LOAD_TX_PPS,
};
use netceil_model::{
    udp_payload_to_frame, FlowResult, MetricId, PacingMode, Results, Run, Unit, Workload,
    WorkloadKind,
};

use super::common::{content_run_id, error, file, finish, new_run, plural};
use crate::{ImportError, ImportOptions, Imported};

/// The name of this format for `--format`.
pub const NAME: &str = "iperf3";

/// Label key of an iperf3 stream, numbered from 1 in the order iperf3 lists them.
pub const LABEL_FLOW: &str = "flow";

fn f(v: &Value, key: &str) -> Option<f64> {
    v.get(key)?.as_f64().filter(|x| x.is_finite())
}

fn u(v: &Value, key: &str) -> Option<u64> {
    let x = v.get(key)?;
    x.as_u64().or_else(|| {
        x.as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(|f| f.round() as u64)
    })
}

fn flag(v: &Value, key: &str) -> Option<bool> {
    let x = v.get(key)?;
    x.as_bool().or_else(|| x.as_i64().map(|i| i != 0))
}

fn s<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key)?.as_str()
}

/// The line where the JSON starts: the first one beginning with `{` (a shell prompt or the
/// command line may come before it in a pasted capture).
fn json_start(text: &str) -> Option<(usize, usize)> {
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if line.trim_start().starts_with('{') {
            return Some((i, offset + (line.len() - line.trim_start().len())));
        }
        offset += line.len();
    }
    None
}

/// Says why a text is not iperf3 JSON.
pub fn sniff(text: &str) -> Result<(), String> {
    let Some((line, offset)) = json_start(text) else {
        return Err("no line starts with '{': not JSON".into());
    };
    let head: String = text[offset..].chars().take(8192).collect();
    let keys = [
        "\"intervals\"",
        "\"test_start\"",
        "\"cpu_utilization_percent\"",
        "\"event\"",
    ];
    if keys.iter().any(|k| head.contains(k)) || (head.contains("\"error\"") && head.len() < 4096) {
        Ok(())
    } else {
        Err(format!(
            "the JSON at line {} has none of iperf3's keys (\"start\"/\"test_start\", \"intervals\", \"end\")",
            line + 1
        ))
    }
}

/// Closes a JSON text cut short after its last complete value: the position to cut at and the
/// brackets to append, or `None` when nothing complete was found.
pub(crate) fn repair(json: &str) -> Option<String> {
    let mut stack: Vec<u8> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    let mut best: Option<(usize, Vec<u8>)> = None;
    for (i, b) in json.bytes().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => stack.push(b),
            b'}' | b']' => {
                stack.pop();
                if !stack.is_empty() {
                    best = Some((i + 1, stack.clone()));
                }
            }
            _ => {}
        }
    }
    let (cut, open) = best?;
    let mut out = json[..cut].to_string();
    for &b in open.iter().rev() {
        out.push(if b == b'{' { '}' } else { ']' });
    }
    Some(out)
}

/// `--json-stream` events (`{"event":"start","data":{…}}` per line) as one document.
fn from_stream(values: Vec<Value>) -> Value {
    let mut doc = Map::new();
    let mut intervals = Vec::new();
    for v in values {
        let data = v.get("data").cloned().unwrap_or(Value::Null);
        match s(&v, "event") {
            Some("start") => {
                doc.insert("start".into(), data);
            }
            Some("interval") => intervals.push(data),
            Some("end") => {
                doc.insert("end".into(), data);
            }
            Some("error") => {
                doc.insert("error".into(), data);
            }
            _ => {}
        }
    }
    doc.insert("intervals".into(), Value::Array(intervals));
    Value::Object(doc)
}

/// Reads the JSON document(s), repairing a cut one. Returns the document, warnings, and
/// whether it was complete.
fn read_document(
    text: &str,
    opts: &ImportOptions,
) -> Result<(Value, Vec<String>, bool), ImportError> {
    let Some((start_line, offset)) = json_start(text) else {
        return Err(error(
            opts,
            1,
            None,
            "an iperf3 JSON document starting with '{'",
            text.lines().next().unwrap_or(""),
        ));
    };
    let mut warnings = Vec::new();
    if start_line > 0 {
        warnings.push(if start_line == 1 {
            "1 line before the JSON was skipped".to_string()
        } else {
            format!("{start_line} lines before the JSON were skipped")
        });
    }
    let json = &text[offset..];
    let mut values = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(json).into_iter::<Value>();
    let mut complete = true;
    loop {
        match stream.next() {
            None => break,
            Some(Ok(v)) => values.push(v),
            Some(Err(e)) => {
                let is_stream = values.first().is_some_and(|v| v.get("event").is_some());
                if e.is_eof() && (values.is_empty() || is_stream) {
                    let rest = &json[stream.byte_offset()..];
                    if let Some(v) =
                        repair(rest).and_then(|r| serde_json::from_str::<Value>(&r).ok())
                    {
                        warnings.push(format!(
                            "the JSON is cut short at line {}: read up to its last complete value",
                            start_line + e.line()
                        ));
                        values.push(v);
                        complete = false;
                        break;
                    }
                }
                if values.is_empty() {
                    let line = start_line + e.line();
                    let found = text
                        .lines()
                        .nth(line.saturating_sub(1))
                        .unwrap_or("")
                        .trim();
                    return Err(ImportError::new(
                        file(opts),
                        line.max(1),
                        Some(e.column().max(1)),
                        format!("valid JSON ({e})"),
                        found,
                    ));
                }
                warnings.push(format!(
                    "text after the JSON document at line {} was skipped",
                    start_line + e.line()
                ));
                break;
            }
        }
    }
    if values.first().is_some_and(|v| v.get("event").is_some()) {
        return Ok((from_stream(values), warnings, complete));
    }
    let mut values = values.into_iter();
    let doc = values.next().unwrap_or(Value::Null);
    let more = values.count();
    if more > 0 {
        warnings.push(format!(
            "{} more JSON {} follow (a server log of several tests?): only the first was imported",
            more,
            if more == 1 { "document" } else { "documents" }
        ));
    }
    Ok((doc, warnings, complete))
}

/// The 1-based line of the first occurrence of `needle`, or 1.
fn line_of(text: &str, needle: &str) -> usize {
    text.find(needle)
        .map_or(1, |i| text[..i].bytes().filter(|&b| b == b'\n').count() + 1)
}

/// What the test was, from `start`.
struct Test {
    udp: bool,
    protocol: String,
    blksize: Option<u64>,
    reverse: bool,
    bidir: bool,
    client: bool,
    ipv6: bool,
    target_bits_per_s: Option<f64>,
    /// Streams (`-P`).
    streams: u32,
    /// iperf3's version (major, minor), from `start.version` ("iperf 3.16").
    version: Option<(u32, u32)>,
}

impl Test {
    /// Whether the local host sends in the forward (or, `reverse_dir`, the bidir reverse)
    /// direction, when the sums carry no `sender` flag.
    fn local_sends(&self, reverse_dir: bool) -> bool {
        let forward_from_client = !self.reverse;
        (self.client == forward_from_client) != reverse_dir
    }
    /// The threads that move one side's data: iperf3 3.16 and later run one per stream; earlier
    /// versions (and a log that does not say) one for all streams.
    fn data_threads(&self) -> u32 {
        match self.version {
            Some(v) if v >= (3, 16) => self.streams.max(1),
            _ => 1,
        }
    }
}

/// "iperf 3.16" (or "3.9.1", "iperf 3.17.1+"): the major and minor version.
fn iperf_version(text: &str) -> Option<(u32, u32)> {
    let v = text.trim().trim_start_matches("iperf").trim();
    let mut parts = v.split('.');
    let major = parts.next()?.trim().parse().ok()?;
    let minor: String = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((major, minor.parse().ok()?))
}

fn read_test(doc: &Value) -> Test {
    let start = doc.get("start").unwrap_or(&Value::Null);
    let ts = start.get("test_start").unwrap_or(&Value::Null);
    let protocol = s(ts, "protocol").unwrap_or("TCP").to_string();
    let connected = start.get("connected").and_then(Value::as_array);
    let ipv6 = connected
        .and_then(|c| c.first())
        .and_then(|c| s(c, "local_host"))
        .is_some_and(|h| h.contains(':') && !h.starts_with("::ffff:"));
    Test {
        udp: protocol.eq_ignore_ascii_case("UDP"),
        blksize: u(ts, "blksize").filter(|b| *b > 0),
        reverse: flag(ts, "reverse").unwrap_or(false),
        bidir: flag(ts, "bidir").unwrap_or(false)
            || doc
                .get("end")
                .is_some_and(|e| e.get("sum_sent_bidir_reverse").is_some()),
        client: start.get("connecting_to").is_some() || start.get("accepted_connection").is_none(),
        ipv6,
        target_bits_per_s: f(ts, "target_bitrate")
            .or_else(|| f(start, "target_bitrate"))
            .filter(|b| *b > 0.0),
        streams: u(ts, "num_streams").map_or(1, |n| n.clamp(1, u64::from(u32::MAX)) as u32),
        version: s(start, "version").and_then(iperf_version),
        protocol,
    }
}

/// Imports iperf3 `--json` output.
pub fn import(text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let (doc, mut warnings, mut complete) = read_document(text, opts)?;
    if !doc.is_object() {
        return Err(error(
            opts,
            1,
            None,
            "an iperf3 result object",
            &doc.to_string(),
        ));
    }
    let intervals: Vec<&Value> = doc
        .get("intervals")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    if let Some(msg) = doc.get("error") {
        let msg = msg.as_str().map_or_else(|| msg.to_string(), str::to_string);
        if intervals.is_empty() {
            return Err(error(
                opts,
                line_of(text, "\"error\""),
                None,
                format!("an iperf3 result; iperf3 reported the error \"{msg}\" instead"),
                "an error report and no intervals",
            ));
        }
        warnings.push(format!(
            "iperf3 reported an error after {}: {msg}; what was measured until then is imported",
            plural(intervals.len(), "interval")
        ));
        complete = false;
    }
    if doc.get("start").is_none() && intervals.is_empty() && doc.get("end").is_none() {
        return Err(error(
            opts,
            1,
            None,
            "an iperf3 result with \"start\", \"intervals\" and \"end\"",
            &doc.to_string(),
        ));
    }
    let test = read_test(&doc);
    let mut run = new_run(NAME, text, opts);
    run.meta.complete = complete;
    host_info(&doc, &mut run);
    let mut workload = Map::new();
    workload.insert("tool".into(), Value::from("iperf3"));
    if let Some(ts) = doc.get("start").and_then(|s| s.get("test_start")) {
        if let Some(o) = ts.as_object() {
            for (k, v) in o {
                workload.insert(k.clone(), v.clone());
            }
        }
    }
    run.workload = Some(Workload {
        kind: if test.udp {
            WorkloadKind::Udp
        } else {
            WorkloadKind::Tcp
        },
        params: netceil_model::params::Params::Other(workload),
    });
    series(&mut run, &intervals, &test, &mut warnings);
    let end = doc
        .get("end")
        .filter(|e| e.as_object().is_some_and(|o| !o.is_empty()));
    let mut results = direction_results(end, &intervals, &test, false, &doc);
    if results.duration_s <= 0.0 && results.tx_bytes == 0 && results.rx_app_bytes == 0 {
        warnings.push("no end summary and no intervals: the results are empty".into());
    }
    if end.is_none() {
        results.notes.push(
            "no end summary (the test was cut short): totals are summed from the intervals".into(),
        );
    }
    run.results = Some(results);
    if test.bidir {
        let mut reverse = new_run(NAME, text, opts);
        reverse.run_id = format!("{}-reverse", content_run_id(text));
        reverse.meta.complete = complete;
        reverse
            .meta
            .labels
            .insert("direction".into(), "reverse".into());
        reverse.results = Some(direction_results(end, &intervals, &test, true, &doc));
        reverse.notes.push(
            "--bidir: this part is the server→client direction; the main results are client→server"
                .into(),
        );
        run.parts.push(reverse);
    }
    run.notes.extend(notes(&doc, &test));
    Ok(finish(run, warnings, opts))
}

fn host_info(doc: &Value, run: &mut Run) {
    let start = doc.get("start").unwrap_or(&Value::Null);
    if let Some(t) = start.get("timestamp").and_then(|t| f(t, "timesecs")) {
        run.meta.started_unix_s = t;
    }
    // `uname -a` of the local host: "Linux vm 6.18.44 #1 SMP … x86_64".
    if let Some(info) = s(start, "system_info") {
        let mut words = info.split_whitespace();
        run.meta.host.os = words.next().map(str::to_string);
        run.meta.host.hostname = words.next().map(str::to_string);
        run.meta.host.kernel = words.next().map(str::to_string);
    }
}

/// Which sums of an interval (or of `end`) belong to a direction: the key of the sum and
/// whether the local host is its sender.
fn interval_sums<'a>(iv: &'a Value, test: &Test) -> Vec<(&'a Value, bool)> {
    let mut out = Vec::new();
    for (key, reverse_dir) in [("sum", false), ("sum_bidir_reverse", true)] {
        if let Some(sum) = iv.get(key) {
            let sender = flag(sum, "sender").unwrap_or_else(|| test.local_sends(reverse_dir));
            out.push((sum, sender));
        }
    }
    out
}

fn set(run: &mut Run, row: usize, id: MetricId, unit: Unit, v: Option<f64>) {
    if let Some(v) = v.filter(|v| v.is_finite()) {
        run.series.set_at(row, &id, unit, v);
    }
}

fn series(run: &mut Run, intervals: &[&Value], test: &Test, warnings: &mut Vec<String>) {
    let mut omitted = 0;
    let mut last_t = f64::NEG_INFINITY;
    let mut lengths = Vec::new();
    for iv in intervals {
        let sums = interval_sums(iv, test);
        let Some(&(first, _)) = sums.first() else {
            continue;
        };
        if flag(first, "omitted") == Some(true) {
            omitted += 1;
            continue;
        }
        let (Some(end), Some(secs)) = (f(first, "end"), f(first, "seconds")) else {
            continue;
        };
        if secs <= 0.0 || end <= last_t {
            warnings.push(format!(
                "an interval ending at {end} s does not follow the one before it; skipped"
            ));
            continue;
        }
        last_t = end;
        lengths.push(secs);
        let row = run.series.push_row(end);
        for (sum, sender) in &sums {
            direction_values(run, row, sum, *sender, test, None);
        }
        let streams = iv.get("streams").and_then(Value::as_array);
        let many = streams.is_some_and(|s| s.len() > 1);
        for (k, st) in streams.into_iter().flatten().enumerate() {
            let sender = flag(st, "sender").unwrap_or_else(|| test.local_sends(false));
            let flow = (k + 1).to_string();
            // With one stream its rates are the sum's; only the TCP gauges are its own.
            if many {
                direction_values(run, row, st, sender, test, Some(&flow));
            }
            let id = |name: &str| MetricId::new(name).with(LABEL_FLOW, flow.clone());
            if !test.udp && sender {
                set(
                    run,
                    row,
                    id(IPERF3_RTT_US),
                    Unit::Microseconds,
                    f(st, "rtt").filter(|r| *r > 0.0),
                );
                set(
                    run,
                    row,
                    id(IPERF3_SND_CWND_BYTES),
                    Unit::Bytes,
                    f(st, "snd_cwnd").filter(|c| *c > 0.0),
                );
            }
        }
    }
    if omitted > 0 {
        warnings.push(format!(
            "{} omitted by -O (warm-up) left out of the series, as iperf3 leaves them out of its totals",
            plural(omitted, "interval")
        ));
    }
    if !lengths.is_empty() {
        // The nominal interval (-i): the median length, as the first and last are often short.
        lengths.sort_by(f64::total_cmp);
        run.series.interval_s = lengths[lengths.len() / 2];
    }
}

/// The rates of one sum or stream, from the local host's point of view.
fn direction_values(
    run: &mut Run,
    row: usize,
    v: &Value,
    sender: bool,
    test: &Test,
    flow: Option<&str>,
) {
    let Some(secs) = f(v, "seconds").filter(|s| *s > 0.0) else {
        return;
    };
    let id = |name: &str| match flow {
        Some(fl) => MetricId::new(name).with(LABEL_FLOW, fl),
        None => MetricId::new(name),
    };
    let bits = f(v, "bits_per_second");
    if sender {
        set(run, row, id(LOAD_TX_BITS_PER_S), Unit::BitsPerSecond, bits);
        if test.udp {
            set(
                run,
                row,
                id(LOAD_TX_PPS),
                Unit::PacketsPerSecond,
                f(v, "packets").map(|p| p / secs),
            );
        } else {
            set(
                run,
                row,
                id(IPERF3_RETRANSMITS_PER_S),
                Unit::PerSecond,
                f(v, "retransmits").map(|r| r / secs),
            );
        }
    } else {
        set(run, row, id(LOAD_RX_BITS_PER_S), Unit::BitsPerSecond, bits);
        if test.udp {
            let packets = f(v, "packets");
            let lost = f(v, "lost_packets");
            if let (Some(p), Some(l)) = (packets, lost) {
                set(
                    run,
                    row,
                    id(LOAD_RX_PPS),
                    Unit::PacketsPerSecond,
                    Some((p - l).max(0.0) / secs),
                );
                set(
                    run,
                    row,
                    id(LOAD_LOST_PER_S),
                    Unit::PerSecond,
                    Some(l / secs),
                );
            }
            set(
                run,
                row,
                id(IPERF3_JITTER_US),
                Unit::Microseconds,
                f(v, "jitter_ms").map(|j| j * 1000.0),
            );
        }
    }
}

/// Sums of one direction over the intervals, for a test whose end summary is missing:
/// (seconds, bytes, packets, lost, local host sends).
fn interval_totals(
    intervals: &[&Value],
    test: &Test,
    reverse_dir: bool,
) -> Option<(f64, u64, u64, u64, bool)> {
    let key = if reverse_dir {
        "sum_bidir_reverse"
    } else {
        "sum"
    };
    let mut acc = (0.0, 0u64, 0u64, 0u64, test.local_sends(reverse_dir));
    let mut any = false;
    for iv in intervals {
        let Some(sum) = iv.get(key) else { continue };
        if flag(sum, "omitted") == Some(true) {
            continue;
        }
        any = true;
        acc.0 += f(sum, "seconds").unwrap_or(0.0);
        acc.1 += u(sum, "bytes").unwrap_or(0);
        acc.2 += u(sum, "packets").unwrap_or(0);
        acc.3 += u(sum, "lost_packets").unwrap_or(0);
        if let Some(sender) = flag(sum, "sender") {
            acc.4 = sender;
        }
    }
    any.then_some(acc)
}

/// The Results of one direction.
fn direction_results(
    end: Option<&Value>,
    intervals: &[&Value],
    test: &Test,
    reverse_dir: bool,
    doc: &Value,
) -> Results {
    let mut r = Results::default();
    let suffix = if reverse_dir { "_bidir_reverse" } else { "" };
    let sent = end.and_then(|e| e.get(format!("sum_sent{suffix}").as_str()));
    let received = end.and_then(|e| e.get(format!("sum_received{suffix}").as_str()));
    // iperf3 3.0/3.1 UDP: one `end.sum`: the sender's bytes, the receiver's packets and loss.
    let old_udp_sum = end
        .filter(|_| test.udp && !reverse_dir && sent.is_none())
        .and_then(|e| e.get("sum"));
    if test.udp {
        r.payload_bytes = test.blksize.and_then(|b| usize::try_from(b).ok());
        r.frame_bytes = r.payload_bytes.map(|p| udp_payload_to_frame(p, test.ipv6));
    }
    match (sent, received, old_udp_sum) {
        (_, _, Some(sum)) => old_udp_totals(&mut r, sum, intervals, test),
        (None, None, None) => interval_totals_into(&mut r, intervals, test, reverse_dir),
        (sent, received, None) => end_totals(&mut r, sent, received, test),
    }
    if test.udp {
        let want_local_sender = test.local_sends(reverse_dir);
        let out_of_order: u64 = end
            .and_then(|e| e.get("streams"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|st| st.get("udp"))
            .filter(|x| !test.bidir || flag(x, "sender") == Some(want_local_sender))
            .filter_map(|x| u(x, "out_of_order"))
            .sum();
        r.reordered_packets = out_of_order;
        if r.in_flight_packets > 0 {
            r.notes.push(format!(
                "{} packets were sent after the last one the receiver saw: lost at the tail or still in flight when it stopped; counted as in flight",
                r.in_flight_packets
            ));
        }
    } else {
        r.notes.push(
            "TCP: iperf3 counts bytes, not packets; packet counts are 0, meaning unknown".into(),
        );
    }
    packet_rates_and_generator(&mut r, test);
    // UDP without a recorded target (3.0/3.1): iperf3 paced at a rate the log does not give.
    // Each side's CPU: the sender's is this host's if it sent, else the remote's, and the
    // receiver's the other. iperf3 counts a whole process; per data thread it is that over
    // the threads moving the data.
    if let Some(cpu) = end.and_then(|e| e.get("cpu_utilization_percent")) {
        let local = test.local_sends(reverse_dir);
        let (tx, rx) = if local {
            ("host_total", "remote_total")
        } else {
            ("remote_total", "host_total")
        };
        let threads = f64::from(test.data_threads());
        if let Some(pct) = f(cpu, tx).filter(|p| *p > 0.0) {
            r.generator.cpu_pct = pct / threads;
            r.generator.cpu_s = pct / 100.0 * r.duration_s;
            r.generator.work_cpu_s = r.generator.cpu_s;
        }
        r.receiver_cpu_pct = f(cpu, rx).filter(|p| *p > 0.0).map(|p| p / threads);
        if threads > 1.0 {
            r.notes.push(format!(
                "iperf3 {} runs a thread per stream: each side's CPU is its process total over {threads} streams",
                test.version.map_or("3.16 or later".into(), |(a, b)| format!("{a}.{b}"))
            ));
        }
    }
    r.flows = flows(end, test, reverse_dir);
    if let Some(v) = doc
        .get("start")
        .and_then(|s| s.get("test_start"))
        .and_then(|t| u(t, "num_streams"))
    {
        if v > 1 && r.flows.is_empty() {
            r.notes
                .push(format!("{v} streams, but no per-stream end summary"));
        }
    }
    r
}

/// The totals of iperf3 3.0/3.1's single UDP `end.sum` (the sender's bytes, the receiver's
/// packets and loss).
fn old_udp_totals(r: &mut Results, sum: &Value, intervals: &[&Value], test: &Test) {
    r.duration_s = f(sum, "seconds").unwrap_or(0.0);
    r.tx_bytes = u(sum, "bytes").unwrap_or(0);
    r.tx_bits_per_s = f(sum, "bits_per_second").unwrap_or(0.0);
    // The sender's own packet count is in its intervals.
    let sender_packets = if test.local_sends(false) {
        interval_totals(intervals, test, false)
            .map(|t| t.2)
            .filter(|p| *p > 0)
    } else {
        None
    };
    let seen = u(sum, "packets").unwrap_or(0);
    let lost = u(sum, "lost_packets").unwrap_or(0);
    r.tx_packets = sender_packets.unwrap_or(seen);
    r.lost_packets = lost;
    r.rx_app_packets = seen.saturating_sub(lost);
    r.rx_app_bytes = test.blksize.map_or(0, |b| b * r.rx_app_packets);
    if r.duration_s > 0.0 {
        r.rx_app_bits_per_s = r.rx_app_bytes as f64 * 8.0 / r.duration_s;
    }
    r.in_flight_packets = r.tx_packets.saturating_sub(seen);
    r.notes.push(
        "iperf3 3.0/3.1 UDP summary: bytes are the sender's, packets and loss the receiver's; received bytes are packets × block size"
            .into(),
    );
    if sender_packets.is_none() {
        r.notes.push("tx_packets is the receiver's sequence count: the sender's own count is not in this log".into());
    }
}

/// The totals of a direction whose end summary is missing, summed over its intervals.
fn interval_totals_into(r: &mut Results, intervals: &[&Value], test: &Test, reverse_dir: bool) {
    if let Some((secs, bytes, packets, lost, local_sends)) =
        interval_totals(intervals, test, reverse_dir)
    {
        r.duration_s = secs;
        let bits = if secs > 0.0 {
            bytes as f64 * 8.0 / secs
        } else {
            0.0
        };
        if local_sends {
            r.tx_bytes = bytes;
            r.tx_bits_per_s = bits;
            r.tx_packets = packets;
        } else {
            r.rx_app_bytes = bytes;
            r.rx_app_bits_per_s = bits;
            r.rx_app_packets = packets.saturating_sub(lost);
            r.lost_packets = lost;
        }
    }
}

/// The totals of a direction from the end summary's `sum_sent` and `sum_received`; what
/// iperf3 wrote as 0 because that side could not know it is said in the notes.
fn end_totals(r: &mut Results, sent: Option<&Value>, received: Option<&Value>, test: &Test) {
    let nonzero = |v: Option<u64>| v.filter(|x| *x > 0);
    let sender_known = sent.is_some_and(|s| nonzero(u(s, "bytes")).is_some());
    r.duration_s = sent
        .filter(|_| sender_known)
        .and_then(|s| f(s, "seconds"))
        .or_else(|| received.and_then(|x| f(x, "seconds")))
        .unwrap_or(0.0);
    if let (Some(s), true) = (sent, sender_known) {
        r.tx_bytes = u(s, "bytes").unwrap_or(0);
        r.tx_bits_per_s = f(s, "bits_per_second").unwrap_or(0.0);
        r.tx_packets = u(s, "packets").unwrap_or(0);
    }
    if let Some(x) = received {
        r.rx_app_bytes = u(x, "bytes").unwrap_or(0);
        r.rx_app_bits_per_s = f(x, "bits_per_second").unwrap_or(0.0);
        if test.udp {
            let seen = u(x, "packets").unwrap_or(0);
            let lost = u(x, "lost_packets").unwrap_or(0);
            r.lost_packets = lost;
            r.rx_app_packets = seen.saturating_sub(lost);
            if !sender_known || r.tx_packets == 0 {
                r.tx_packets = seen;
                r.notes.push(
                    "this log lacks the sender's totals (iperf3 writes 0 on the receiving side): tx_packets is the receiver's sequence count, packets sent after the last one that arrived are not counted"
                        .into(),
                );
            }
            r.in_flight_packets = r.tx_packets.saturating_sub(seen);
        }
    }
    let receiver_known = received.is_some_and(|x| nonzero(u(x, "bytes")).is_some());
    if sender_known && !receiver_known {
        r.notes.push(
            "this log lacks the receiver's totals (iperf3 writes 0 on the sending side): rx_app_* are 0, meaning unknown"
                .into(),
        );
    }
    if !sender_known && !test.udp {
        r.notes.push(
            "this log lacks the sender's totals (iperf3 writes 0 on the receiving side): tx_bytes and tx_bits_per_s are 0, meaning unknown"
                .into(),
        );
    }
}

/// Packet rates, the packets nobody accounts for, and how the generator paced and kept up.
fn packet_rates_and_generator(r: &mut Results, test: &Test) {
    let duration = r.duration_s;
    if duration > 0.0 {
        r.tx_pps = r.tx_packets as f64 / duration;
        r.rx_app_pps = r.rx_app_packets as f64 / duration;
    }
    r.unexplained_packets =
        r.tx_packets as i64 - (r.rx_app_packets + r.lost_packets + r.in_flight_packets) as i64;
    if !test.udp {
        r.unexplained_packets = 0;
    }
    if let Some(target) = test.target_bits_per_s {
        if test.udp {
            if let Some(b) = test.blksize.filter(|b| *b > 0) {
                r.requested_pps = Some(target / (8.0 * b as f64));
            }
        }
        if r.tx_bits_per_s > 0.0 {
            let ratio = r.tx_bits_per_s / target;
            r.generator.achieved_ratio = Some(ratio);
            r.generator_limited = ratio < 0.95;
        }
        r.generator.pacing = Some(PacingMode::Sleep);
    } else if !test.udp {
        r.generator.pacing = Some(PacingMode::None);
    }
}

fn flows(end: Option<&Value>, test: &Test, reverse_dir: bool) -> Vec<FlowResult> {
    let Some(streams) = end.and_then(|e| e.get("streams")).and_then(Value::as_array) else {
        return Vec::new();
    };
    let want_local_sender = test.local_sends(reverse_dir);
    let mut out = Vec::new();
    for (k, st) in streams.iter().enumerate() {
        let (sender, receiver, udp) = (st.get("sender"), st.get("receiver"), st.get("udp"));
        let side = sender.or(udp).or(receiver);
        let Some(side) = side else { continue };
        // With --bidir, each stream says whether the local host sends it.
        if let Some(local) = flag(side, "sender") {
            if test.bidir && local != want_local_sender {
                continue;
            }
        } else if reverse_dir {
            continue;
        }
        let mut best = side;
        if sender.is_some_and(|x| u(x, "bytes") == Some(0)) {
            if let Some(rcv) = receiver {
                best = rcv;
            }
        }
        out.push(FlowResult {
            flow: u32::try_from(k + 1).unwrap_or(u32::MAX),
            bytes: u(best, "bytes").unwrap_or(0),
            bits_per_s: f(best, "bits_per_second").unwrap_or(0.0),
            retransmits: sender
                .filter(|x| u(x, "bytes").is_some_and(|b| b > 0))
                .and_then(|x| u(x, "retransmits")),
            segments_out: None,
            rtt_us: sender.and_then(|x| f(x, "mean_rtt")).filter(|r| *r > 0.0),
        });
    }
    out
}

fn notes(doc: &Value, test: &Test) -> Vec<String> {
    let start = doc.get("start").unwrap_or(&Value::Null);
    let mut out = Vec::new();
    let version = s(start, "version").unwrap_or("iperf3 (version not given)");
    let role = if test.client { "client" } else { "server" };
    let direction = if test.bidir {
        "both directions (--bidir)"
    } else if test.reverse {
        "server → client (-R)"
    } else {
        "client → server"
    };
    out.push(format!(
        "{version}, {role} side, {} test, data {direction}",
        test.protocol
    ));
    if let Some(c) = start
        .get("connected")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
    {
        out.push(format!(
            "connection: {}:{} → {}:{}",
            s(c, "local_host").unwrap_or("?"),
            u(c, "local_port").map_or("?".into(), |p| p.to_string()),
            s(c, "remote_host").unwrap_or("?"),
            u(c, "remote_port").map_or("?".into(), |p| p.to_string())
        ));
    }
    let end = doc.get("end").unwrap_or(&Value::Null);
    if let Some(cpu) = end.get("cpu_utilization_percent") {
        let g = |k: &str| f(cpu, k).map_or("?".into(), |v| format!("{v:.1}"));
        out.push(format!(
            "iperf3 CPU use (% of one core over the test): this host total {} (user {}, system {}), remote total {} (user {}, system {})",
            g("host_total"),
            g("host_user"),
            g("host_system"),
            g("remote_total"),
            g("remote_user"),
            g("remote_system")
        ));
    }
    for key in ["sender_tcp_congestion", "receiver_tcp_congestion"] {
        if let Some(cc) = s(end, key) {
            out.push(format!("{}: {cc}", key.replace('_', " ")));
        }
    }
    if test.udp {
        let sum = end.get("sum_received").or_else(|| end.get("sum"));
        if let Some(sum) = sum {
            if let (Some(j), Some(l)) = (f(sum, "jitter_ms"), f(sum, "lost_percent")) {
                out.push(format!(
                    "UDP: jitter {j:.4} ms, {l:.3} % lost (receiver's view)"
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repair_closes_after_last_complete_value() {
        let cut = r#"{"a": [{"x": 1}, {"x": 2}, {"x"#;
        let fixed = repair(cut).unwrap();
        let v: Value = serde_json::from_str(&fixed).unwrap();
        assert_eq!(v["a"].as_array().unwrap().len(), 2);
        assert!(repair("{\"a\": 1").is_none(), "nothing complete inside");
    }

    #[test]
    fn json_start_skips_a_prompt() {
        let t = "$ iperf3 -c x -J\n  {\n}";
        assert_eq!(json_start(t), Some((1, 19)));
    }
}
