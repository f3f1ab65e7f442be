//! sysstat's JSON (`sadf -j`, `mpstat -o JSON`) on captures recorded on a 2-vCPU VM with
//! sysstat 12.6.1: `sadc -S XALL 1 3 y.sa`, then `sadf -j y.sa -- -A` (sadf-j-A.json),
//! `sar -A -f y.sa` (sadf-j-A.sar-A.txt) and `sadf -d y.sa -- -A` (sadf-j-A.sadf-d.csv) of the
//! same file; `mpstat -o JSON -P ALL 1 3` and `mpstat -o JSON -A 1 1`. Then malformed input.

mod mutate;

use netceil_import::formats::{sadf, sar, sysstat_json};
use netceil_import::{Format, Imported};
use netceil_model::MetricId;

use mutate::{fixture, opts, sweep};

fn json(name: &str) -> Imported {
    let text = fixture(&format!("sysstat-json/{name}"));
    sysstat_json::import(&text, &opts(name)).unwrap_or_else(|e| panic!("{e}"))
}

fn values(i: &Imported, id: &MetricId) -> Vec<Option<f64>> {
    i.run
        .series
        .get(id)
        .unwrap_or_else(|| panic!("no metric {id}"))
        .values
        .clone()
}

fn id(name: &str, labels: &[(&str, &str)]) -> MetricId {
    let mut id = MetricId::new(name);
    for (k, v) in labels {
        id = id.with(*k, *v);
    }
    id
}

#[test]
fn both_json_outputs_are_detected() {
    mutate::assert_detected(
        "sysstat-json",
        &[
            "sadf-j-A.json",
            "mpstat-o-JSON-P-ALL.json",
            "mpstat-o-JSON-A.json",
        ],
        Format::SysstatJson,
    );
}

/// The JSON and the text of one data file give the same figures: every series the JSON
/// gives is in the text import with the same values at the same times, and the text's
/// series the JSON lacks are only those of activities it names as skipped.
#[test]
fn sadf_json_and_the_text_reports_of_the_same_file_agree() {
    let j = json("sadf-j-A.json");
    let text = fixture("sysstat-json/sadf-j-A.sar-A.txt");
    let t = sar::import(&text, &opts("sar")).unwrap_or_else(|e| panic!("{e}"));
    let csv = fixture("sysstat-json/sadf-j-A.sadf-d.csv");
    let d = sadf::import(&csv, &opts("sadf-d")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(j.run.series.t_s, [1.0, 2.0]);
    assert_eq!(j.run.series.t_s, t.run.series.t_s);
    assert_eq!(j.run.series.interval_s, 1.0);
    for m in &j.run.series.metrics {
        let other = t
            .run
            .series
            .get(&m.id)
            .unwrap_or_else(|| panic!("{} is not in the sar text import", m.id));
        assert_eq!(m.values, other.values, "{}", m.id);
        assert_eq!(m.unit, other.unit, "{}", m.id);
        if let Some(o) = d.run.series.get(&m.id) {
            assert_eq!(m.values, o.values, "{} against sadf -d", m.id);
        }
    }
    // What the text has and the JSON not: the skipped activities' series only.
    let missing: Vec<String> = t
        .run
        .series
        .metrics
        .iter()
        .filter(|m| j.run.series.get(&m.id).is_none())
        .map(|m| m.id.to_string())
        .collect();
    for m in &missing {
        assert!(
            m.contains("device=")
                || m.contains("filesystem=")
                || m.contains("tty=")
                || m.contains("mhz")
                || m.contains("fs")
                || m.contains("inode")
                || m.contains("util"),
            "the JSON import lacks {m}; the text has it"
        );
    }
    let note = j
        .run
        .notes
        .iter()
        .find(|n| n.starts_with("activities not read"))
        .expect("a note naming the skipped activities");
    for a in ["disk", "filesystems", "serial", "power-management"] {
        assert!(note.contains(a), "{note}");
    }
    // The activities the issue names, present and read with their labels.
    for (name, labels) in [
        ("cpu_user_pct", &[][..]),
        ("cpu_user_pct", &[("cpu", "1")][..]),
        ("cs_per_s", &[]),
        ("intr_per_s", &[]),
        ("intr_per_s", &[("cpu", "0")]),
        ("sar_irq_per_s", &[("irq", "LOC")]),
        ("iface_rx_pps", &[("iface", "lo")]),
        ("iface_rx_errors_per_s", &[("iface", "lo")]),
        ("softnet_processed_per_s", &[("cpu", "1")]),
        ("procs_blocked", &[]),
        ("sar_runq_sz", &[]),
        ("sar_ldavg_1", &[]),
        ("sar_memfree_bytes", &[]),
        ("tcp_in_segs_per_s", &[]),
        ("psi_cpu_some_pct", &[]),
    ] {
        let m = id(name, labels);
        assert_eq!(values(&j, &m).len(), 2, "{m}");
    }
    // A figure checked by hand against the JSON: 93.03 %usr, 997.03 cswch at 01:08:02.
    assert_eq!(values(&j, &id("cpu_user_pct", &[]))[0], Some(93.03));
    assert_eq!(values(&j, &id("cs_per_s", &[]))[0], Some(997.03));
    let host = &j.run.meta.host;
    assert_eq!(
        (host.hostname.as_deref(), host.os.as_deref(), host.cpus),
        (Some("vm"), Some("Linux"), Some(2))
    );
    // sadf -j stamps are UTC: the start is one interval before the first record, 01:08:02.
    assert_eq!(j.run.meta.started_unix_s, 1_795_741_681.0);
    assert!(j.warnings.is_empty(), "{:?}", j.warnings);
}

#[test]
fn mpstat_json_reads_cpus_and_interrupts() {
    let i = json("mpstat-o-JSON-P-ALL.json");
    assert_eq!(i.run.series.t_s, [1.0, 2.0, 3.0]);
    assert_eq!(
        values(&i, &id("cpu_user_pct", &[])),
        [Some(84.08), Some(82.50), Some(94.95)]
    );
    assert_eq!(
        values(&i, &id("cpu_system_pct", &[("cpu", "1")])),
        [Some(13.00), Some(11.00), Some(6.06)]
    );
    assert_eq!(i.run.meta.started_unix_s, 0.0, "local times: no start");
    assert!(i.run.notes.iter().any(|n| n.contains("local")));

    let a = json("mpstat-o-JSON-A.json");
    assert_eq!(a.run.series.t_s, [1.0]);
    assert_eq!(values(&a, &id("intr_per_s", &[])), [Some(655.0)]);
    assert_eq!(
        values(&a, &id("intr_per_s", &[("cpu", "1")])),
        [Some(198.0)]
    );
    assert!(a
        .run
        .series
        .get(&id(
            "sar_softirq_per_s",
            &[("cpu", "0"), ("softirq", "TIMER")]
        ))
        .is_some());
    assert!(a
        .run
        .series
        .get(&id("sar_irq_per_s", &[("cpu", "0"), ("irq", "24")]))
        .is_some());
    assert!(a
        .run
        .series
        .get(&id("cpu_idle_pct", &[("node", "0")]))
        .is_some());
}

#[test]
fn a_document_cut_short_keeps_its_complete_records() {
    let text = fixture("sysstat-json/mpstat-o-JSON-P-ALL.json");
    // Cut inside the third record.
    let cut = text.rfind("\"cpu\": \"1\"").unwrap();
    let i = sysstat_json::import(&text[..cut], &opts("cut.json")).unwrap();
    assert_eq!(i.run.series.t_s, [1.0, 2.0]);
    assert!(
        i.warnings
            .iter()
            .any(|w| w.starts_with("cut.json: the JSON ends early at line")),
        "{:?}",
        i.warnings
    );
    // Cut before any record is complete: an error at the end, naming line and column.
    let early = text.find("\"usr\"").unwrap();
    let e = sysstat_json::import(&text[..early], &opts("cut.json")).unwrap_err();
    assert_eq!(e.file, "cut.json");
    assert_eq!(e.line, 14);
    assert!(e.column.is_some());
    assert!(e.expected.contains("ends early"), "{e}");
}

#[test]
fn a_wrong_type_is_named_with_its_line_and_column() {
    let text =
        fixture("sysstat-json/sadf-j-A.json").replacen("\"usr\": 93.03", "\"usr\": \"93.03\"", 1);
    let e = sysstat_json::import(&text, &opts("bad.json")).unwrap_err();
    let line = text
        .lines()
        .position(|l| l.contains("\"usr\": \"93.03\""))
        .unwrap()
        + 1;
    assert_eq!((e.file.as_str(), e.line), ("bad.json", line));
    assert!(e.column.is_some_and(|c| c > 20), "{e}");
    assert!(e.expected.contains("a number under 'usr'"), "{e}");
    let said = e.to_string();
    assert!(
        said.starts_with(&format!("bad.json: line {line}, column ")),
        "{said}"
    );

    // A field of the host with the wrong type: serde's own words.
    let text = fixture("sysstat-json/sadf-j-A.json").replacen(
        "\"number-of-cpus\": 2",
        "\"number-of-cpus\": \"two\"",
        1,
    );
    let e = sysstat_json::import(&text, &opts("bad.json")).unwrap_err();
    assert!(e.expected.contains("u32"), "{e}");
    assert!(e.column.is_some());

    // Broken syntax.
    let text = fixture("sysstat-json/mpstat-o-JSON-P-ALL.json").replacen(
        "\"usr\": 84.08,",
        "\"usr\": 84.08",
        1,
    );
    let e = sysstat_json::import(&text, &opts("bad.json")).unwrap_err();
    assert_eq!(e.line, 14);
    assert!(e.expected.starts_with("valid JSON"), "{e}");
}

#[test]
fn an_unknown_activity_is_skipped_with_a_note() {
    let text = fixture("sysstat-json/mpstat-o-JSON-P-ALL.json").replace(
        "\"cpu-load\": [",
        "\"frobs\": {\"x\": [1, {\"y\": null}]},\n\t\t\t\t\t\"cpu-load\": [",
    );
    let i = sysstat_json::import(&text, &opts("u.json")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(i.run.series.t_s, [1.0, 2.0, 3.0]);
    assert!(
        i.run
            .notes
            .iter()
            .any(|n| n.starts_with("activities not read") && n.contains("frobs")),
        "{:?}",
        i.run.notes
    );
}

#[test]
fn a_record_without_a_time_is_an_error_at_its_line() {
    let text = fixture("sysstat-json/mpstat-o-JSON-P-ALL.json").replacen(
        "\"timestamp\": \"00:57:44\",",
        "",
        1,
    );
    let e = sysstat_json::import(&text, &opts("t.json")).unwrap_err();
    // The second record's opening brace.
    let second = text
        .lines()
        .enumerate()
        .filter(|(_, l)| *l == "\t\t\t\t{")
        .nth(1)
        .unwrap()
        .0
        + 1;
    assert_eq!(e.line, second, "{e}");
    assert!(e.expected.contains("timestamp"), "{e}");
}

#[test]
fn not_json_is_refused_by_sniff_and_the_fixtures_survive_mutation() {
    assert!(sysstat_json::sniff("{\"start\": {}}").is_err());
    assert!(sysstat_json::sniff("").is_err());
    for name in ["sadf-j-A.json", "mpstat-o-JSON-P-ALL.json"] {
        let text = fixture(&format!("sysstat-json/{name}"));
        sweep(Format::SysstatJson, name, &text, true);
    }
}
