//! The JSON Schema of a Run, generated from the model types with schemars.
//!
//! The schema is published as `docs/run.schema.json`; a test regenerates it and fails when
//! the committed file is stale, so the schema can never drift from the code.

use netceil_model::Run;

/// The JSON Schema (draft 2020-12) of [`Run`] as `netceil export --format json` writes it.
pub fn run_schema() -> serde_json::Value {
    schemars::schema_for!(Run).to_value()
}

/// The same, pretty-printed with a trailing newline: the content of `docs/run.schema.json`.
pub fn run_schema_pretty() -> String {
    let mut text = serde_json::to_string_pretty(&run_schema())
        .unwrap_or_else(|e| unreachable!("a JSON value always serializes: {e}"));
    text.push('\n');
    text
}
