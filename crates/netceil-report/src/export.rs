//! `netceil export`: the whole Run as JSON, or its series as CSV for a spreadsheet.
//!
//! JSON is the Run exactly as serde writes it; its schema is published in
//! `docs/run.schema.json` (see [`crate::run_schema`]). CSV has one row per interval and one
//! column per metric, with the unit in each header, so a reader needs nothing else to plot it.
//! A value that was not measured is an empty cell, never 0.

use std::io::Write;

use netceil_model::Run;

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("writing the run as JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("writing the series as CSV: {0}")]
    Csv(#[from] csv::Error),
    #[error("writing the export: {0}")]
    Io(#[from] std::io::Error),
    #[error("run {run_id}: metric {metric} has {values} values for {rows} rows; the series is inconsistent")]
    RaggedSeries {
        run_id: String,
        metric: String,
        values: usize,
        rows: usize,
    },
}

/// Writes the whole Run as pretty-printed JSON, followed by a newline.
pub fn export_json(run: &Run, out: &mut dyn Write) -> Result<(), ExportError> {
    serde_json::to_writer_pretty(&mut *out, run)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}

/// The CSV header of the time column.
pub const CSV_TIME_HEADER: &str = "t_s [s]";

/// Writes the series as CSV: first column `t_s [s]` (end of each interval, seconds since the
/// run's start), then one column per metric headed `name{labels} [unit]`.
pub fn export_csv(run: &Run, out: &mut dyn Write) -> Result<(), ExportError> {
    let series = &run.series;
    let rows = series.len();
    if let Some(bad) = series.metrics.iter().find(|m| m.values.len() != rows) {
        return Err(ExportError::RaggedSeries {
            run_id: run.run_id.clone(),
            metric: bad.id.to_string(),
            values: bad.values.len(),
            rows,
        });
    }
    let mut writer = csv::Writer::from_writer(out);
    let mut header = Vec::with_capacity(series.metrics.len() + 1);
    header.push(CSV_TIME_HEADER.to_string());
    header.extend(
        series
            .metrics
            .iter()
            .map(|m| format!("{} [{}]", m.id, m.unit.symbol())),
    );
    writer.write_record(&header)?;
    let mut record: Vec<String> = Vec::with_capacity(header.len());
    for (row, t) in series.t_s.iter().enumerate() {
        record.clear();
        record.push(t.to_string());
        record.extend(
            series
                .metrics
                .iter()
                .map(|m| m.values[row].map(|v| v.to_string()).unwrap_or_default()),
        );
        writer.write_record(&record)?;
    }
    writer.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use netceil_model::{MetricId, RunSource, Unit};

    fn two_row_run() -> Run {
        let mut run = Run::new("r1", RunSource::Live);
        run.series.push_row(1.0);
        run.series
            .set(&MetricId::new("cs_per_s"), Unit::PerSecond, 1500.0);
        run.series.push_row(2.5);
        let irq = MetricId::new("irq_per_s")
            .with("irq", "38")
            .with("iface", "eth0");
        run.series.set(&irq, Unit::PerSecond, 0.0);
        run
    }

    #[test]
    fn csv_has_units_quoting_and_empty_missing_cells() {
        let mut out = Vec::new();
        export_csv(&two_row_run(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "t_s [s],cs_per_s [/s],\"irq_per_s{iface=eth0,irq=38} [/s]\"\n\
             1,1500,\n\
             2.5,,0\n"
        );
    }

    #[test]
    fn csv_rejects_a_ragged_series() {
        let mut run = two_row_run();
        run.series.metrics[0].values.pop();
        let err = export_csv(&run, &mut Vec::new()).unwrap_err();
        assert!(
            err.to_string().contains("cs_per_s has 1 values for 2 rows"),
            "{err}"
        );
    }

    #[test]
    fn json_round_trips() {
        let run = two_row_run();
        let mut out = Vec::new();
        export_json(&run, &mut out).unwrap();
        let back: Run = serde_json::from_slice(&out).unwrap();
        assert_eq!(back, run);
    }
}
