//! `netceil analyze FILE… | RUN`: import other tools' logs (or take a stored run) and diagnose.
//!
//! An argument that names an existing file (or `-` for stdin) is imported; anything else is
//! a stored run (an id, a unique prefix, or `last`) to analyze again.

use anyhow::{anyhow, Context};
use netceil_import::{import_log, Format, ImportOptions, Imported};
use netceil_model::{bus_data_rate, Annotations, Run};
use std::io::Write;
use std::path::Path;

use crate::cli::AnalyzeArgs;
use crate::engine::open_store;
use crate::{render, Done, Failure, Outcome};

fn annotations(args: &AnalyzeArgs) -> Result<Annotations, Failure> {
    let mut a = Annotations {
        throughput_bits_per_s: args.throughput,
        link_bits_per_s: args.link,
        interval_s: args.interval.map(|d| d.as_secs_f64()),
        ..Annotations::default()
    };
    if let Some(bus) = &args.bus {
        let (rate, _) = bus_data_rate(bus).ok_or_else(|| {
            Failure::usage(anyhow!(
                "--bus {bus}: unknown bus; expected e.g. PCIe1.1x1, \"PCIe 3.0 x8\" or PCI32/33"
            ))
        })?;
        a.bus = Some(bus.clone());
        a.bus_bits_per_s = Some(rate);
    }
    Ok(a)
}

/// Imports one file: by the named format, or by detection that explains itself when it
/// fails. The log is read line by line where its reader streams (see
/// [`netceil_import::import_log`]).
fn import_one(arg: &str, args: &AnalyzeArgs) -> Result<Imported, Failure> {
    let format = match args.format.as_deref() {
        None | Some("auto") => None,
        Some(name) => Some(Format::from_name(name).ok_or_else(|| {
            let names = Format::ALL
                .iter()
                .map(|f| f.name())
                .collect::<Vec<_>>()
                .join(", ");
            Failure::usage(anyhow!(
                "--format {name}: unknown; expected auto or one of: {names}"
            ))
        })?),
    };
    let opts = ImportOptions {
        file: arg.to_string(),
        interval_s: args.interval.map(|d| d.as_secs_f64()),
        annotations: annotations(args)?,
        labels: args.labels.iter().cloned().collect(),
    };
    let imported = if arg == "-" {
        import_log(std::io::stdin().lock(), format, &opts)
    } else {
        let file = std::fs::File::open(arg)
            .map_err(|e| Failure::usage(anyhow!("cannot read {arg}: {e}")))?;
        import_log(file, format, &opts)
    };
    let imported = imported.map_err(Failure::usage)?;
    // The importer keeps its warnings in the run's notes too; here they are shown once.
    for w in &imported.warnings {
        eprintln!("netceil: {w}");
    }
    Ok(imported)
}

/// Analyzes an imported run and stores it (replacing the same log imported before).
fn analyze_imported(
    mut run: Run,
    what: &str,
    options: &netceil_analyze::Options,
    store: Option<&netceil_store::Store>,
) -> Result<Run, Failure> {
    netceil_analyze::analyze_into_with(&mut run, options);
    if let Some(s) = store {
        let _ = s.delete(&run.run_id);
        s.put_run(&run)
            .with_context(|| format!("storing the run imported from {what}"))?;
    }
    Ok(run)
}

pub fn run(args: AnalyzeArgs) -> Outcome {
    let store = open_store(args.no_store);
    let options = netceil_analyze::Options {
        window_s: args.window.map(|d| d.as_secs_f64()),
        cpus: args.cpus,
    };
    let mut runs = Vec::new();
    if args.join {
        // Every file is imported before anything is joined or stored.
        let logs = args.inputs.iter().map(|a| import_one(a, &args));
        let logs = logs.collect::<Result<Vec<_>, _>>()?;
        let run = netceil_import::join(logs).map_err(|e| Failure::usage(anyhow!(e)))?;
        runs.push(analyze_imported(
            run,
            &args.inputs.join(" + "),
            &options,
            store.as_ref(),
        )?);
    }
    let inputs = args
        .inputs
        .iter()
        .filter(|_| !args.join)
        .map(|a| (a, false))
        .chain(args.runs.iter().map(|a| (a, true)));
    for (arg, stored) in inputs {
        if !stored && (arg == "-" || Path::new(arg).exists()) {
            let run = import_one(arg, &args)?.run;
            runs.push(analyze_imported(run, arg, &options, store.as_ref())?);
        } else {
            let Some(s) = &store else {
                return Err(Failure::usage(anyhow!(
                    "{arg}: no such file, and without the store (--no-store) it cannot be a stored run"
                )));
            };
            let id = s
                .resolve(arg)
                .map_err(|e| Failure::usage(anyhow!("{arg}: no such file, and {e}")))?;
            let mut run = s
                .get_run(&id)
                .with_context(|| format!("reading run {id}"))?;
            let a = annotations(&args)?;
            if a != Annotations::default() {
                run.meta.annotations = a;
            }
            netceil_analyze::analyze_into_with(&mut run, &options);
            s.set_findings(&id, &run.findings)
                .with_context(|| format!("storing the findings of {id}"))?;
            runs.push(run);
        }
    }
    let mut out = crate::out::stdout();
    if args.json {
        // One shape whatever the count: an array of runs, even for one file.
        let mut doc = serde_json::to_value(&runs).context("serializing")?;
        if let (true, Some(list)) = (args.explain, doc.as_array_mut()) {
            for (v, run) in list.iter_mut().zip(&runs) {
                if let Some(o) = v.as_object_mut() {
                    o.insert("ledgers".into(), render::explain_json(run, &options));
                }
            }
        }
        serde_json::to_writer_pretty(&mut out, &doc).context("writing JSON")?;
        writeln!(out).context("writing to stdout")?;
        return Ok(stored_or_not(&args, store.as_ref()));
    }
    for run in &runs {
        writeln!(out, "{}", describe(run)).context("writing to stdout")?;
        let mut text = String::new();
        if run.results.is_some() {
            text.push_str(&netceil_report::text::summary(run));
        }
        text.push_str(&netceil_report::text::verdict(run));
        let text = netceil_report::text::wrap_lines(&text, render::width());
        write!(out, "{text}").context("writing to stdout")?;
        if args.explain {
            write!(out, "{}", render::explain(run, &options)).context("writing to stdout")?;
        }
        match &store {
            Some(s) => writeln!(out, "stored as {} in {}\n", run.run_id, s.path().display()),
            None => writeln!(out, "not stored\n"),
        }
        .context("writing to stdout")?;
    }
    Ok(stored_or_not(&args, store.as_ref()))
}

/// Runs that were to be stored and were not (the store could not be opened): exit code 1.
fn stored_or_not(args: &AnalyzeArgs, store: Option<&netceil_store::Store>) -> Done {
    crate::engine::store_outcome(args.no_store, store.is_some())
}

fn describe(run: &Run) -> String {
    use netceil_model::RunSource;
    let what = match &run.source {
        RunSource::Imported { format, file } => format!("{file} ({format})"),
        _ => format!("run {}", run.run_id),
    };
    format!(
        "{what}: {} intervals, {} lock rows",
        run.series.len(),
        run.locks.len()
    )
}
