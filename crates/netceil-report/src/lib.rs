//! netceil's reports: what a Run looks like to a person or another program.
//!
//! - [`export_json`] and [`export_csv`]: the whole Run, or its series as a table.
//! - [`markdown`]: summary, results and findings as markdown.
//! - [`html_report`]: one self-contained HTML file with SVG charts (rendered by plotters)
//!   of one or more runs; it fetches nothing, so it opens offline and from `file://`.
//! - [`compare`]: run A against run B, with normalized figures, per-interval distributions
//!   and a named significance test; rendered by [`compare_table`] and [`compare_markdown`],
//!   or serialized as JSON.
//! - [`run_schema`]: the JSON Schema of the Run, published as `docs/run.schema.json`.
//! - [`iperf`]: a run in iperf3's short per-interval layout (`run --format iperf`).
//! - [`text`] and [`tables`]: a run as the terminal shows it (summary, verdict, what was not
//!   measured) and the planners' tables (search, sweep udp, sweep tcp, with [`flows`]).
//!
//! Libraries never print: every function returns a String or writes to a `dyn Write`.

mod charts;
mod compare;
mod compare_render;
mod export;
mod far;
pub mod flows;
mod html;
mod iperf;
mod ledger;
mod markdown;
#[cfg(test)]
mod render_snapshots;
mod schema;
mod stats;
mod summary;
pub mod tables;
pub mod text;
mod view;
mod words;

pub use compare::{
    compare, compare_with, knee_pairs, load_phase, unlike, Comparison, Difference, DistributionRow,
    Figure, FindingBrief, FindingsDiff, KneePair, LoadPhase, PhaseSummary, Side, ALPHA, CONFIDENCE,
    LOAD_PHASE_EDGE_TRIM, LOAD_PHASE_THRESHOLD, STEADIER_CV_RATIO,
};
pub use compare_render::{compare_markdown, compare_table};
pub use export::{export_csv, export_json, ExportError, CSV_TIME_HEADER};
pub use html::html_report;
pub use iperf::iperf;
pub use ledger::{ledger_table, ledgers_text};
pub use markdown::markdown;
pub use schema::{run_schema, run_schema_pretty};
pub use stats::{welch_t_test, Distribution, TestError, WelchTest, WELCH_METHOD};
pub use summary::loss_pct;
pub use view::{LABEL_THROUGHPUT_BITS_PER_S, LABEL_THROUGHPUT_BYTES_PER_S};
