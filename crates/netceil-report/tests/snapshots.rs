//! Snapshots of the text reports (markdown export, compare table and markdown), built from
//! fixed synthetic runs so nothing in them is volatile. Review changes with `cargo insta review`.

mod common;

use common::{msk2, sk0, vmstat_run};
use netceil_report::{compare, compare_markdown, compare_table, markdown};

#[test]
fn markdown_export_of_a_full_run() {
    insta::assert_snapshot!(markdown(&common::full_run()));
}

#[test]
fn compare_sk0_msk2_table() {
    let c = compare(
        &vmstat_run("sk0", &sk0(false)),
        &vmstat_run("msk2", &msk2(false)),
    );
    insta::assert_snapshot!(compare_table(&c));
}

#[test]
fn compare_sk0_msk2_markdown() {
    let c = compare(
        &vmstat_run("sk0", &sk0(true)),
        &vmstat_run("msk2", &msk2(true)),
    );
    insta::assert_snapshot!(compare_markdown(&c));
}
