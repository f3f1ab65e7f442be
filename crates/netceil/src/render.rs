//! What a run looks like on this terminal beyond what `netceil_report::text` renders: the
//! verdict's ledgers, analyzed here with the command's options and fitted to the terminal.

use netceil_model::Run;

/// The run's ledgers (one, or one per part) as tables fitted to the terminal, or to 120
/// columns through a pipe.
pub fn explain(run: &Run, opts: &netceil_analyze::Options) -> String {
    let width = netceil_engine::terminal_width(false)
        .unwrap_or(120)
        .clamp(60, 400);
    netceil_report::ledgers_text(&netceil_analyze::ledgers(run, opts), width as u16)
}

/// The run's ledgers as JSON: `[{"part": label, "ledger": …}]`.
pub fn explain_json(run: &Run, opts: &netceil_analyze::Options) -> serde_json::Value {
    serde_json::Value::Array(
        netceil_analyze::ledgers(run, opts)
            .into_iter()
            .map(|(part, ledger)| serde_json::json!({ "part": part, "ledger": ledger }))
            .collect(),
    )
}
