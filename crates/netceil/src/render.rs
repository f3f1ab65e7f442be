//! What a run looks like on this terminal beyond what `netceil_report::text` renders: the
//! verdict's ledgers, analyzed here with the command's options and fitted to the terminal.

use netceil_model::Run;

/// The width to fit prose and tables to: the terminal's when stdout is one, else `COLUMNS`
/// when it is set to a number, else 80.
pub fn width() -> usize {
    netceil_engine::terminal_width(false)
        .or_else(|| std::env::var("COLUMNS").ok()?.trim().parse().ok())
        .filter(|w| *w > 0)
        .unwrap_or(80)
}

/// A run as `run` and `show` end: one screen, the essentials (`quiet`), or everything
/// (`verbose`), fitted to [`width`].
pub fn end_of_run(run: &Run, stored: Option<&str>, quiet: bool, verbose: bool) -> String {
    if verbose {
        return netceil_report::text::full(run, width());
    }
    let screen = netceil_report::text::Screen {
        width: width(),
        quiet,
        stored,
    };
    netceil_report::text::brief(run, &screen)
}

/// The run's ledgers (one, or one per part) as tables fitted to [`width`].
pub fn explain(run: &Run, opts: &netceil_analyze::Options) -> String {
    let width = width().clamp(60, 400);
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
