//! `export`, `report` and `compare`: stored runs out as files and side by side.

use anyhow::{anyhow, Context};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::cli::{CompareArgs, CompareFormat, ExportArgs, ExportFormat, ReportArgs};
use crate::engine::{open_for_reading, resolve};
use crate::{Done, Failure, Outcome};

/// Writes to a file, or to stdout for `-`; the file is written whole or not at all.
fn write_to(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>,
) -> Result<(), Failure> {
    if path == Path::new("-") {
        let mut out = crate::out::stdout();
        write(&mut out)?;
        out.flush().context("writing to stdout")?;
        return Ok(());
    }
    if path.is_dir() {
        return Err(Failure::usage(anyhow!(
            "cannot write {}: it is a directory; expected a file, e.g. {}",
            path.display(),
            path.join("report.html").display()
        )));
    }
    let tmp = path.with_extension("partial");
    let file = File::create(&tmp)
        .map_err(|e| Failure::of_path(&e, anyhow!("cannot create {}: {e}", tmp.display())))?;
    let written = (|| {
        let mut w = BufWriter::new(file);
        write(&mut w)?;
        w.flush()
            .with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(())
    })();
    if written.is_err() {
        // Whatever went wrong, no half-written file is left behind.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

pub fn export(args: ExportArgs) -> Outcome {
    let store = open_for_reading()?;
    let id = resolve(&store, &args.run)?;
    let run = store
        .get_run(&id)
        .with_context(|| format!("reading run {id}"))?;
    write_to(&args.output, |w| {
        match args.format {
            ExportFormat::Json => netceil_report::export_json(&run, w)?,
            ExportFormat::Csv => netceil_report::export_csv(&run, w)?,
            ExportFormat::Markdown => w
                .write_all(netceil_report::markdown(&run).as_bytes())
                .context("writing")?,
        }
        Ok(())
    })?;
    if args.output != Path::new("-") {
        eprintln!(
            "wrote {} ({:?} of run {id})",
            args.output.display(),
            args.format
        );
    }
    Ok(Done::Success)
}

pub fn report(args: ReportArgs) -> Outcome {
    let store = open_for_reading()?;
    let mut runs = Vec::new();
    for spec in &args.runs {
        let id = resolve(&store, spec)?;
        runs.push(
            store
                .get_run(&id)
                .with_context(|| format!("reading run {id}"))?,
        );
    }
    let html = netceil_report::html_report(&runs);
    let output = if args.output.is_dir() {
        args.output.join("report.html")
    } else {
        args.output.clone()
    };
    write_to(&output, |w| {
        w.write_all(html.as_bytes()).context("writing the report")
    })?;
    if output != Path::new("-") {
        eprintln!(
            "wrote {} ({} run{})",
            output.display(),
            runs.len(),
            if runs.len() == 1 { "" } else { "s" }
        );
    }
    Ok(Done::Success)
}

pub fn compare(args: CompareArgs) -> Outcome {
    let store = open_for_reading()?;
    let a = store
        .get_run(&resolve(&store, &args.a)?)
        .context("reading run A")?;
    let b = store
        .get_run(&resolve(&store, &args.b)?)
        .context("reading run B")?;
    let c = netceil_report::compare(&a, &b);
    if let (Some(why), false) = (&c.unlike, args.unlike) {
        return Err(Failure::usage(anyhow!(
            "compare {} {}: {why}; compare runs of one workload, or give --unlike to compare them anyway",
            a.run_id,
            b.run_id
        )));
    }
    let mut out = crate::out::stdout();
    match args.format {
        CompareFormat::Table => write!(out, "{}", netceil_report::compare_table(&c)),
        CompareFormat::Markdown => write!(out, "{}", netceil_report::compare_markdown(&c)),
        CompareFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &c).context("writing JSON")?;
            writeln!(out)
        }
    }
    .context("writing to stdout")?;
    Ok(Done::Success)
}
