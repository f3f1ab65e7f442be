//! The published JSON Schema of a Run: it must match the code, and real Run JSON must
//! validate against it.

mod common;

use std::path::PathBuf;

use netceil_model::Run;
use netceil_report::{export_json, run_schema, run_schema_pretty};
use serde_json::Value;

fn schema_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/run.schema.json")
}

#[test]
fn committed_schema_is_current() {
    let path = schema_path();
    let generated = run_schema_pretty();
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &generated).expect("write docs/run.schema.json");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/run.schema.json is out of date with the model types in crates/netceil-model; \
         regenerate it with: UPDATE_SCHEMA=1 cargo test -p netceil-report --test schema"
    );
}

/// Every object that lists its properties gets `additionalProperties: false`, so a field
/// the serializer writes but the schema does not describe fails validation. The published
/// schema stays open, because fields may be added to the JSON contract.
fn strict(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out: serde_json::Map<String, Value> =
                map.iter().map(|(k, v)| (k.clone(), strict(v))).collect();
            if out.contains_key("properties") && !out.contains_key("additionalProperties") {
                out.insert("additionalProperties".into(), Value::Bool(false));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(strict).collect()),
        other => other.clone(),
    }
}

fn errors(schema: &Value, instance: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(schema).expect("the schema compiles");
    validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

fn assert_valid(what: &str, instance: &Value) {
    for (name, schema) in [
        ("published", run_schema()),
        ("strict", strict(&run_schema())),
    ] {
        let errs = errors(&schema, instance);
        assert!(
            errs.is_empty(),
            "{what} does not match the {name} schema:\n{}",
            errs.join("\n")
        );
    }
}

fn exported(run: &Run) -> Value {
    let mut out = Vec::new();
    export_json(run, &mut out).unwrap();
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn fully_populated_run_validates() {
    let run = common::full_run();
    assert_valid("a Run with every field set", &exported(&run));
}

#[test]
fn every_source_variant_validates() {
    for source in common::all_sources() {
        let mut run = common::full_run();
        run.source = source;
        assert_valid("a Run with another source", &exported(&run));
    }
}

#[test]
fn captured_udp_run_validates_and_round_trips() {
    let text = include_str!("fixtures/run-udp.json");
    let value: Value = serde_json::from_str(text).unwrap();
    assert_valid("tests/fixtures/run-udp.json", &value);
    let run: Run = serde_json::from_str(text).unwrap();
    // Fields added to the model since the capture appear with their defaults, so compare
    // the Runs, not the texts.
    let back: Run = serde_json::from_value(exported(&run)).unwrap();
    assert!(
        back == run,
        "the captured run does not survive export and re-import"
    );
}

#[test]
fn schema_rejects_malformed_runs() {
    let good = exported(&common::full_run());

    let mut wrong_type = good.clone();
    wrong_type["series"]["t_s"] = Value::String("soon".into());
    assert!(!errors(&run_schema(), &wrong_type).is_empty());

    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("meta");
    assert!(!errors(&run_schema(), &missing).is_empty());

    let mut bad_unit = good.clone();
    bad_unit["series"]["metrics"][0]["unit"] = Value::String("furlongs".into());
    assert!(!errors(&run_schema(), &bad_unit).is_empty());

    let mut undescribed = good;
    undescribed["results"]["surprise"] = Value::Bool(true);
    assert!(!errors(&strict(&run_schema()), &undescribed).is_empty());
}
