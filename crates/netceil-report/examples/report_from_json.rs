//! Builds the HTML report from Run JSON files until `netceil report` reads the store:
//! `cargo run -p netceil-report --example report_from_json -- -o report.html run1.json [run2.json…]`.

use std::process::ExitCode;

use netceil_model::Run;

fn load(path: &str) -> Result<Run, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: cannot read: {e}"))?;
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "{path}: line {}, column {}: not a netceil Run as JSON: {e}",
            e.line(),
            e.column()
        )
    })
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut out: Option<String> = None;
    let mut inputs = Vec::new();
    while let Some(a) = args.next() {
        match a.as_str() {
            "-o" => out = args.next(),
            _ => inputs.push(a),
        }
    }
    let (Some(out), false) = (out, inputs.is_empty()) else {
        eprintln!("usage: report_from_json -o report.html RUN.json [RUN.json…]");
        return ExitCode::from(2);
    };
    let mut runs = Vec::new();
    for path in &inputs {
        match load(path) {
            Ok(run) => runs.push(run),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let html = netceil_report::html_report(&runs);
    if let Err(e) = std::fs::write(&out, html) {
        eprintln!("error: {out}: cannot write: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
