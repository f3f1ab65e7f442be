//! Snapshots of what people read: `runs`, `show`, `compare` and the markdown export, on runs
//! imported from the seed investigations (deterministic input), with volatile parts redacted.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn seed(name: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/seeds")
        .join(name);
    root.display().to_string()
}

fn netceil(db: &Path) -> Command {
    let mut c = Command::cargo_bin("netceil").expect("binary built");
    c.env("NETCEIL_DB", db)
        .env("COLUMNS", "200")
        .timeout(std::time::Duration::from_secs(60));
    c
}

fn stdout(c: &mut Command) -> String {
    let out = c.output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Replaces what changes from machine to machine: the database path and the fixture path.
fn redact(text: &str, db: &Path) -> String {
    let seeds = PathBuf::from(seed("")).display().to_string();
    text.replace(&db.display().to_string(), "[DB]")
        .replace(&seeds, "[SEEDS]/")
}

fn imported_store() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    stdout(netceil(&db).args([
        "analyze",
        &seed("freebsd-vmstat-sk0.txt"),
        "--throughput",
        "18MB/s",
        "--label",
        "nic=sk0",
    ]));
    stdout(netceil(&db).args([
        "analyze",
        &seed("freebsd-vmstat-msk2.txt"),
        "--throughput",
        "35MB/s",
        "--label",
        "nic=msk2",
    ]));
    (dir, db)
}

fn id_of(db: &Path, label: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(&stdout(
        netceil(db).args(["runs", "--json", "--label", label]),
    ))
    .unwrap();
    v[0]["run_id"].as_str().unwrap().to_string()
}

#[test]
fn snapshot_runs_show_compare_and_markdown() {
    let (_dir, db) = imported_store();
    insta::assert_snapshot!("runs", redact(&stdout(netceil(&db).args(["runs"])), &db));
    let sk0 = id_of(&db, "nic=sk0");
    let msk2 = id_of(&db, "nic=msk2");
    insta::assert_snapshot!(
        "show_sk0",
        redact(&stdout(netceil(&db).args(["show", &sk0])), &db)
    );
    insta::assert_snapshot!(
        "compare_sk0_msk2",
        redact(&stdout(netceil(&db).args(["compare", &sk0, &msk2])), &db)
    );
    insta::assert_snapshot!(
        "export_markdown_msk2",
        redact(
            &stdout(netceil(&db).args(["export", &msk2, "--format", "markdown"])),
            &db
        )
    );
}

#[test]
fn msk2_ran_with_fewer_and_steadier_context_switches_per_byte_than_sk0() {
    let (_dir, db) = imported_store();
    let sk0 = id_of(&db, "nic=sk0");
    let msk2 = id_of(&db, "nic=msk2");
    let c: serde_json::Value = serde_json::from_str(&stdout(
        netceil(&db).args(["compare", &sk0, &msk2, "--format", "json"]),
    ))
    .unwrap();
    let find = |list: &str, key: &str| {
        c[list]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["key"] == key)
            .cloned()
            .unwrap_or_else(|| panic!("{list}.{key} in {c}"))
    };
    // Fewer context switches: the difference is negative and significant.
    let diff = find("differences", "cs_per_s");
    assert!(diff["test"]["difference"].as_f64().unwrap() < 0.0, "{diff}");
    assert_eq!(diff["significant"], true, "{diff}");
    // Steadier: a lower coefficient of variation over the load phase.
    let dist = find("distributions", "cs_per_s");
    assert!(
        dist["b"]["cv"].as_f64().unwrap() < dist["a"]["cv"].as_f64().unwrap(),
        "{dist}"
    );
    // More work per context switch once the throughputs are given.
    let per_cs = find("normalized", "bytes_per_cs");
    assert!(
        per_cs["b"].as_f64().unwrap() > 2.0 * per_cs["a"].as_f64().unwrap(),
        "{per_cs}"
    );
}
