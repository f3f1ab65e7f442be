//! The declared minimum Rust version is true: every crate of the workspace inherits it, and
//! no locked dependency needs a newer compiler. (The code's side is checked in .ci/run:
//! clippy's `incompatible_msrv` lint, which reads the same `rust-version`, and a build with
//! that compiler, which also sees newer trait impls and language features.)

use serde_json::Value;
use std::process::Command;

/// `1.89`, `1.89.0` → (1, 89, 0).
fn version(v: &str) -> (u64, u64, u64) {
    let mut parts = v.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    )
}

#[test]
fn the_declared_rust_version_is_what_the_locked_dependencies_need() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml");
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked"])
        .args(["--manifest-path", manifest])
        .output()
        .expect("running cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    let members: Vec<&str> = meta["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let packages = meta["packages"].as_array().unwrap();
    let ours = |p: &&Value| members.contains(&p["id"].as_str().unwrap_or(""));
    let declared: Vec<(&str, &str)> = packages
        .iter()
        .filter(ours)
        .map(|p| {
            (
                p["name"].as_str().unwrap(),
                p["rust_version"].as_str().unwrap_or("none"),
            )
        })
        .collect();
    let msrv = declared[0].1;
    for (name, v) in &declared {
        assert_eq!(
            *v, msrv,
            "{name} declares rust-version {v}: every crate inherits the workspace's"
        );
    }
    let too_new: Vec<String> = packages
        .iter()
        .filter(|p| !ours(p))
        .filter_map(|p| {
            let need = p["rust_version"].as_str()?;
            (version(need) > version(msrv)).then(|| {
                format!(
                    "{} {} needs {need}",
                    p["name"].as_str().unwrap_or("?"),
                    p["version"].as_str().unwrap_or("?")
                )
            })
        })
        .collect();
    assert!(
        too_new.is_empty(),
        "the workspace declares rust-version {msrv}, but: {}",
        too_new.join("; ")
    );
}
