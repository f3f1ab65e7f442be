//! Analyzes a Run saved as JSON (`netceil run … --json > run.json`) and prints its findings:
//! a way to try the analyzer on live runs before the CLI wires it in.
//!
//! `cargo run -p netceil-analyze --example analyze_json -- run.json [--window 30s] [--cpus 8]
//! [--ledger|--causes]` (`--ledger` prints the ledger as JSON instead, `--causes` only the
//! findings' causes, one a line, the top one first).

use netceil_analyze::{analyze_with, ledgers, Options};
use netceil_model::Run;

fn main() {
    let mut opts = Options::default();
    let mut path = None;
    let mut ledger = false;
    let mut causes = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--window" => {
                opts.window_s = args
                    .next()
                    .and_then(|w| w.trim_end_matches('s').parse().ok())
            }
            "--cpus" => opts.cpus = args.next().and_then(|c| c.parse().ok()),
            "--ledger" => ledger = true,
            "--causes" => causes = true,
            _ => path = Some(a),
        }
    }
    let Some(path) = path else {
        eprintln!("usage: analyze_json RUN.json [--window SECONDS] [--cpus N] [--ledger|--causes]");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let run: Run = match serde_json::from_str(&text) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{path}: not a netceil Run: {e}");
            std::process::exit(1);
        }
    };
    if ledger {
        let all = ledgers(&run, &opts);
        println!("{}", serde_json::to_string_pretty(&all).unwrap_or_default());
        return;
    }
    for f in analyze_with(&run, &opts) {
        if causes {
            println!("{}", f.cause);
        } else {
            print!("{f}");
        }
    }
}
