//! The store's commands: `runs`, `show`, `rm`.

use anyhow::Context;
use netceil_model::{fmt, time, RunSource, Unit, WorkloadKind};
use netceil_store::{RunFilter, RunSummary, Store};
use std::io::Write;

use crate::cli::{RmArgs, RunFormat, RunsArgs, ShowArgs};
use crate::engine::{open_for_reading, resolve};
use crate::{render, Done, Failure, Outcome};

/// Opens the store to change it (`rm`); here a broken store is an error, not a warning.
pub fn open() -> Result<Store, Failure> {
    Store::open_default().map_err(|e| Failure::from(anyhow::Error::new(e)))
}

fn kind(s: &RunSummary) -> String {
    match (&s.kind, &s.source) {
        (Some(k), _) => match k {
            WorkloadKind::Udp => "udp",
            WorkloadKind::Tcp => "tcp",
            WorkloadKind::Rr => "rr",
            WorkloadKind::Rrul => "rrul",
            WorkloadKind::Suite => "suite",
            WorkloadKind::Search => "search",
            WorkloadKind::Sweep => "sweep",
            WorkloadKind::External => "watch",
        }
        .to_string(),
        (None, RunSource::Watched { .. }) => "watch".into(),
        (None, RunSource::Imported { format, .. }) => format!("import:{format}"),
        (None, RunSource::Live) => "live".into(),
    }
}

/// A start time, or `unknown` for logs that carry none (a sar or vmstat capture without dates).
fn when(unix_s: f64) -> String {
    if unix_s > 0.0 {
        time::format_utc(unix_s)
            .replace('T', " ")
            .trim_end_matches('Z')
            .to_string()
    } else {
        "unknown".into()
    }
}

/// The one figure that says most about a run: rx bit/s and pps, else tps.
fn headline(s: &RunSummary) -> String {
    match (s.rx_app_bits_per_s, s.rx_app_pps, s.transactions_per_s) {
        (Some(b), Some(p), _) if p > 0.0 => format!(
            "{}  {}",
            fmt::value(b, Unit::BitsPerSecond),
            fmt::value(p, Unit::PacketsPerSecond)
        ),
        (Some(b), _, _) if b > 0.0 => fmt::value(b, Unit::BitsPerSecond),
        (_, _, Some(t)) => format!("{} tps", fmt::number(t)),
        _ => "-".into(),
    }
}

pub fn runs(args: RunsArgs) -> Outcome {
    let store = open_for_reading()?;
    let filter = RunFilter {
        labels: args.labels.into_iter().collect(),
        last: args.last,
    };
    let list = store.list(&filter).context("listing runs")?;
    let mut out = crate::out::stdout();
    if args.json {
        let rows: Vec<_> = list
            .iter()
            .map(|s| {
                serde_json::json!({
                    "run_id": s.run_id, "started": (s.started_unix_s > 0.0).then(|| time::format_utc(s.started_unix_s)), "kind": kind(s),
                    "labels": s.labels, "complete": s.complete, "rx_app_bits_per_s": s.rx_app_bits_per_s,
                    "rx_app_pps": s.rx_app_pps, "transactions_per_s": s.transactions_per_s, "verdict": s.verdict,
                })
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &rows).context("writing JSON")?;
        writeln!(out).context("writing to stdout")?;
        return Ok(Done::Success);
    }
    if list.is_empty() {
        writeln!(out, "no runs in {}", store.path().display()).context("writing to stdout")?;
        return Ok(Done::Success);
    }
    use netceil_report::tables::{fitted, Column};
    let columns = [
        Column {
            header: "id",
            cut_to: None,
        },
        Column {
            header: "when (UTC)",
            cut_to: None,
        },
        Column {
            header: "workload",
            cut_to: None,
        },
        Column {
            header: "ceiling",
            cut_to: None,
        },
        Column {
            header: "verdict",
            cut_to: Some(12),
        },
        Column {
            header: "labels",
            cut_to: Some(8),
        },
    ];
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|s| {
            let labels = s
                .labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ");
            let mut id = s.run_id.clone();
            if !s.complete {
                id.push_str(" (incomplete)");
            }
            vec![
                id,
                when(s.started_unix_s),
                kind(s),
                headline(s),
                s.verdict.clone().unwrap_or_else(|| "-".into()),
                labels,
            ]
        })
        .collect();
    // Cut to the terminal (or COLUMNS, or 80) unless --wide asks for every column whole.
    let width = (!args.wide).then(render::width);
    write!(out, "{}", fitted(&columns, &rows, width)).context("writing to stdout")?;
    Ok(Done::Success)
}

pub fn show(args: ShowArgs) -> Outcome {
    let store = open_for_reading()?;
    let id = resolve(&store, &args.run)?;
    let run = store
        .get_run(&id)
        .with_context(|| format!("reading run {id}"))?;
    let mut out = crate::out::stdout();
    if args.explain {
        let opts = netceil_analyze::Options::default();
        if args.json {
            let doc = serde_json::json!({
                "run_id": run.run_id,
                "ledgers": render::explain_json(&run, &opts),
            });
            serde_json::to_writer_pretty(&mut out, &doc).context("writing JSON")?;
            writeln!(out).context("writing to stdout")?;
        } else {
            write!(out, "{}", render::explain(&run, &opts)).context("writing to stdout")?;
        }
        return Ok(Done::Success);
    }
    if args.json {
        serde_json::to_writer_pretty(&mut out, &run).context("writing JSON")?;
        writeln!(out).context("writing to stdout")?;
        return Ok(Done::Success);
    }
    if args.format == RunFormat::Iperf {
        // The lines `run --format iperf` printed at its end, from the stored run.
        write!(out, "{}", netceil_report::iperf(&run)).context("writing to stdout")?;
        return Ok(Done::Success);
    }
    writeln!(
        out,
        "run {} ({}), started {}{}",
        run.run_id,
        match &run.source {
            RunSource::Live => "live".to_string(),
            RunSource::Watched { command: Some(c) } => format!("watched: {}", c.join(" ")),
            RunSource::Watched { command: None } => "watched".to_string(),
            RunSource::Imported { format, file } => format!("imported {format} from {file}"),
        },
        if run.meta.started_unix_s > 0.0 {
            time::format_utc(run.meta.started_unix_s)
        } else {
            "at an unknown time".into()
        },
        if run.meta.complete {
            ""
        } else {
            ", INCOMPLETE (cut short)"
        }
    )
    .context("writing to stdout")?;
    if !run.meta.labels.is_empty() {
        let labels = run
            .meta
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        writeln!(out, "labels: {labels}").context("writing to stdout")?;
    }
    writeln!(out, "{}", intervals_line(&run.series)).context("writing to stdout")?;
    let text = render::end_of_run(&run, Some(&run.run_id), false, args.verbose);
    write!(out, "{text}").context("writing to stdout")?;
    Ok(Done::Success)
}

/// How many intervals were recorded, and how long each is. A run killed before its end, by a
/// netceil older than its store, kept no interval: that is said, not "0 s".
fn intervals_line(series: &netceil_model::Series) -> String {
    if series.interval_s > 0.0 {
        format!(
            "{} intervals of {} s recorded",
            series.len(),
            series.interval_s
        )
    } else {
        format!(
            "{} intervals recorded (the sampling interval was not stored)",
            series.len()
        )
    }
}

pub fn rm(args: RmArgs) -> Outcome {
    // Resolve every spec first, on the store only read: a typo in the third removes nothing,
    // and a store that is not there is not made.
    let ids = {
        let reading = open_for_reading()?;
        args.runs
            .iter()
            .map(|spec| resolve(&reading, spec))
            .collect::<Result<Vec<_>, _>>()?
    };
    let store = open()?;
    for id in ids {
        store
            .delete(&id)
            .with_context(|| format!("removing run {id}"))?;
        crate::outln!("removed {id}");
    }
    Ok(Done::Success)
}
