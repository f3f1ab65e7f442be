//! Plausibility checks: captures damaged the way real ones arrive (two captures interleaved,
//! a log pasted twice, a counter reset, a wrapped table) import with what cannot be true in
//! `run.meta.implausible`, at the right line, and every real capture imports with nothing
//! there.
//!
//! The damaged captures are under tests/fixtures/implausible/, each made from a real fixture
//! by interleaving, duplicating, cutting or editing lines (its README.md says which, how, and
//! where the impossible fact is).

mod mutate;

use std::path::{Path, PathBuf};

use netceil_import::{detect, import, Format, ImportOptions, Imported};
use netceil_model::MetricId;

use mutate::opts;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Every real capture: the crate's fixtures (less the damaged ones) and the repository's seeds.
fn real_captures() -> Vec<PathBuf> {
    let mut out = Vec::new();
    files(&fixtures(), &mut out);
    let seeds = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/seeds");
    files(&seeds, &mut out);
    out.retain(|p| {
        !p.components().any(|c| c.as_os_str() == "implausible")
            && p.extension().is_none_or(|e| e != "rs")
    });
    out
}

#[test]
fn every_real_capture_imports_with_nothing_implausible() {
    let mut checked = 0;
    let mut report = Vec::new();
    for path in real_captures() {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.display().to_string();
        let Ok(format) = detect(&text) else {
            report.push(format!("{name}: not detected"));
            continue;
        };
        let mut imported = false;
        for interval_s in [None, Some(1.0)] {
            let o = ImportOptions {
                interval_s,
                ..opts(&name)
            };
            let Ok(i) = import(format, &text, &o) else {
                continue;
            };
            imported = true;
            assert!(
                i.run.meta.implausible.is_empty(),
                "{name} ({}): {:#?}",
                format.name(),
                i.run.meta.implausible
            );
            assert!(
                !i.warnings.iter().any(|w| w.contains("cannot be true")),
                "{name}: {:?}",
                i.warnings
            );
        }
        if imported {
            checked += 1;
        } else {
            report.push(format!("{name}: does not import"));
        }
    }
    eprintln!(
        "{checked} real captures imported with nothing implausible; not imported: {report:#?}"
    );
    assert!(checked >= 120, "{checked} captures checked");
}

/// A damaged capture from tests/fixtures/implausible, read as detection reads it.
fn damaged(name: &str, expect: Format) -> Imported {
    let text = std::fs::read_to_string(fixtures().join("implausible").join(name)).unwrap();
    let format = detect(&text).unwrap_or_else(|_| panic!("{name}: not detected"));
    assert_eq!(format, expect, "{name}");
    import(format, &text, &opts(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Asserts that the run holds an impossible fact at `line` whose words contain `words`, and
/// that a warning says it at that line.
fn marked(i: &Imported, line: usize, words: &str) {
    let found = &i.run.meta.implausible;
    assert!(
        found
            .iter()
            .any(|f| f.line == Some(line) && f.what.contains(words)),
        "no '{words}' at line {line} in {found:#?}"
    );
    assert!(
        i.warnings
            .iter()
            .any(|w| w.contains(&format!("line {line}: cannot be true")) && w.contains(words)),
        "no warning '{words}' at line {line} in {:#?}",
        i.warnings
    );
}

fn values(i: &Imported, id: &MetricId) -> Vec<Option<f64>> {
    i.run
        .series
        .get(id)
        .map(|m| m.values.clone())
        .unwrap_or_default()
}

fn cpu(name: &str, n: u32) -> MetricId {
    MetricId::new(name).with("cpu", n.to_string())
}

#[test]
fn a_cpu_that_comes_again_inside_one_block_is_marked() {
    // Two mpstat runs writing into one file: every row of a block comes twice.
    let i = damaged("mpstat-P-ALL-interleaved.txt", Format::Mpstat);
    marked(
        &i,
        6,
        "CPU all appears again at line 6 inside the block that began at line 5",
    );
    marked(&i, 15, "CPU all appears again at line 15");
    assert_eq!(i.run.meta.implausible.len(), 2, "one fact per block");
    // The run still imports: the marks do not throw the data away.
    assert_eq!(i.run.series.len(), 2);
    // sadf -d: a second run's CPU rows among the first's, at the same time.
    let i = damaged("sadf-d-P-ALL-interleaved.csv", Format::Sadf);
    marked(
        &i,
        5,
        "CPU 0 appears again at line 5 inside the block that began at line 2 (first at line 3)",
    );
    // softnet_stat rows of two captures under one timestamp.
    let i = damaged("softnet-rows-under-one-stamp.txt", Format::ProcSnapshot);
    marked(
        &i,
        4,
        "CPU 0 appears again at line 4 inside the block that began at line 2 (under the timestamp at line 1)",
    );
    // /proc/interrupts with two rows pasted twice in the second snapshot.
    let i = damaged("interrupts-rows-twice.txt", Format::ProcSnapshot);
    marked(
        &i,
        55,
        "IRQ 38 appears again at line 55 inside the block that began at line 40 (first at line 53)",
    );
    // FreeBSD vmstat -P whose group line names cpu0 twice.
    let i = damaged("freebsd-percpu-P-titles-twice.txt", Format::VmstatFreebsd);
    marked(&i, 1, "CPU 0 is named twice in the header at line 1");
}

#[test]
fn a_counter_that_goes_backwards_is_marked() {
    // watch screens of /proc/softirqs: NET_RX on CPU 1 falls in the third screen.
    let i = damaged("watch-softirqs-counter-reset.txt", Format::ProcSnapshot);
    marked(
        &i,
        35,
        "between the snapshots at lines 17 and 31, 1 counter since boot went backwards",
    );
    marked(&i, 35, "NET_RX/cpu1 104857834 → 4113 (line 35)");
    assert_eq!(i.run.meta.implausible.len(), 1);
    // The rates stand, and the interval that went backwards has no value.
    let rx = values(&i, &cpu("softirq_net_rx_per_s", 1));
    assert_eq!(rx, [Some(321_368.0), None]);
    // /proc/net/dev: the first snapshot pasted again after the second.
    let i = damaged("net-dev-pasted-again.txt", Format::ProcSnapshot);
    marked(&i, 18, "lo/rx_bytes 770486529055 → 770442413782 (line 18)");
    // Erlang: a scheduler's total time falls between two snapshots.
    let i = damaged("erlang-wall-time-reset.txt", Format::ErlangWallTime);
    marked(
        &i,
        11,
        "scheduler 4's times went backwards between the snapshots at lines 9 and 11",
    );
}

#[test]
fn more_cpus_than_the_machine_has_are_marked() {
    // A block of four CPUs under a banner that says two.
    let i = damaged("mpstat-P-ALL-more-cpus-than-banner.txt", Format::Mpstat);
    marked(
        &i,
        9,
        "the block that began at line 9 has 4 CPU rows, but the banner at line 1 says the machine has 2 CPUs",
    );
    marked(&i, 12, "CPU 2 at line 12 does not exist");
    marked(&i, 13, "CPU 3 at line 13 does not exist");
    assert_eq!(i.run.meta.implausible.len(), 3);
    // sar -I ALL with a column for CPU 1 under a banner that says one CPU.
    let i = damaged("sar-I-ALL-columns-beyond-banner.txt", Format::Sar);
    marked(
        &i,
        3,
        "the header at line 3 has a column for CPU 1, but the banner at line 1 says the machine has 1 CPU",
    );
}

#[test]
fn shares_that_cannot_add_up_are_marked() {
    let i = damaged("sar-P-ALL-shares.txt", Format::Sar);
    marked(&i, 5, "%user of CPU 0 is 171 at line 5");
    marked(&i, 11, "the shares of CPU 1 at line 11 add up to 150.00 %");
    assert_eq!(i.run.meta.implausible.len(), 2);
    // Marked, not dropped: the analyzer decides what to trust.
    assert_eq!(values(&i, &cpu("cpu_user_pct", 0))[0], Some(171.0));
    let i = damaged("vmstat-linux-shares.txt", Format::VmstatLinux);
    marked(&i, 5, "the shares of the CPUs at line 5 add up to 140.00 %");
    let i = damaged("freebsd-percpu-P-shares.txt", Format::VmstatFreebsd);
    marked(&i, 4, "the shares of CPU 1 at line 4 add up to 130.00 %");
}

#[test]
fn a_small_negative_share_in_a_row_that_adds_up_is_tolerated() {
    // sysstat prints a counter that stepped back as a negative idle; the rest of the row
    // adds up with it, so the row is the kernel's accounting, not a damaged file.
    let i = damaged("sar-P-ALL-negative-idle.txt", Format::Sar);
    marked(&i, 10, "%idle of CPU 0 is -20 at line 10");
    marked(&i, 11, "%idle of CPU 1 is -8 at line 11");
    assert_eq!(
        i.run.meta.implausible.len(),
        2,
        "{:?}",
        i.run.meta.implausible
    );
    assert_eq!(values(&i, &cpu("cpu_idle_pct", 0))[0], Some(-8.0));
}

#[test]
fn time_that_runs_backwards_is_marked() {
    let i = damaged("sar-u-pasted-twice.txt", Format::Sar);
    marked(
        &i,
        10,
        "the time at line 10 (23:58:45) is earlier than the one at line 6 (23:58:48), and not by a midnight rollover",
    );
    assert_eq!(i.run.meta.implausible.len(), 1);
    let i = damaged("vmstat-linux-t-pasted-twice.txt", Format::VmstatLinux);
    marked(
        &i,
        8,
        "the time at line 8 (2026-11-21 23:59:37) is earlier than the one at line 5 (2026-11-21 23:59:39)",
    );
    let i = damaged("sadf-d-u-interleaved.csv", Format::Sadf);
    marked(
        &i,
        4,
        "the time at line 4 (2026-11-21 23:59:30 UTC) is earlier",
    );
    let i = damaged("snmp-snapshots-swapped.txt", Format::ProcSnapshot);
    marked(&i, 15, "the time at line 15 (---- Sun Nov 22 00:13:28 UTC 2026 ----) is earlier than the one at line 1");
    // Swapped snapshots also run their counters backwards.
    marked(&i, 17, "Ip/InReceives 286850040 → 286656533 (line 17)");
    let i = damaged("net-dev-pasted-again.txt", Format::ProcSnapshot);
    marked(
        &i,
        15,
        "the time at line 15 (1795306408) is earlier than the one at line 8 (1795306410)",
    );
}

#[test]
fn midnight_and_the_next_days_report_are_not_time_running_backwards() {
    let text = std::fs::read_to_string(fixtures().join("sysstat/sar-u-12h-midnight.txt")).unwrap();
    let i = import(Format::Sar, &text, &opts("m")).unwrap();
    assert!(i.run.meta.implausible.is_empty());
    // Two days' reports one after the other: the second banner names the next day.
    let day = std::fs::read_to_string(fixtures().join("sysstat/sar-u-24h.txt")).unwrap();
    let next = day
        .replace("11/21/26", "11/22/26")
        .replace("23:58:4", "09:00:0");
    let text = format!("{}{next}", day.replace("23:58:4", "14:00:0"));
    let i = import(Format::Sar, &text, &opts("days")).unwrap();
    assert!(
        i.run.meta.implausible.is_empty(),
        "{:#?}",
        i.run.meta.implausible
    );
    // The same report pasted twice under one date is marked (see above); under another
    // host's banner it is two machines in one file.
    let other = day.replace("(vm)", "(db2)").replace("23:58:4", "23:59:4");
    let i = import(Format::Sar, &format!("{day}{other}"), &opts("hosts")).unwrap();
    marked(
        &i,
        8,
        "the banner at line 8 names host db2, the one at line 1 host vm",
    );
}

#[test]
fn offline_cpus_are_missing_not_busy() {
    // CPU 1 offline: sysstat prints every field 0.00, idle included.
    let i = damaged("mpstat-P-ALL-cpu1-offline.txt", Format::Mpstat);
    assert!(i.run.meta.implausible.is_empty(), "offline is no damage");
    assert!(
        i.warnings
            .iter()
            .any(|w| w.contains("line 6 and 1 more rows: CPU 1 was offline")),
        "{:?}",
        i.warnings
    );
    for m in ["cpu_idle_pct", "cpu_user_pct", "cpu_system_pct"] {
        assert!(
            values(&i, &cpu(m, 1)).iter().all(Option::is_none),
            "{m}: {:?}",
            values(&i, &cpu(m, 1))
        );
    }
    assert_eq!(
        values(&i, &cpu("cpu_user_pct", 0)),
        [Some(97.03), Some(95.0)]
    );
    // The same in sadf -d: CPU 1's records all zero.
    let text = std::fs::read_to_string(fixtures().join("sysstat/sadf-d-P-ALL.csv")).unwrap();
    let text: String = text
        .lines()
        .map(|l| match l.split_once(" UTC;1;") {
            Some((head, _)) => format!("{head} UTC;1;0.00;0.00;0.00;0.00;0.00;0.00\n"),
            None => format!("{l}\n"),
        })
        .collect();
    let i = import(Format::Sadf, &text, &opts("sadf")).unwrap();
    assert!(i.run.meta.implausible.is_empty());
    assert!(i.warnings.iter().any(|w| w.contains("CPU 1 was offline")));
    assert!(values(&i, &cpu("cpu_idle_pct", 1))
        .iter()
        .all(Option::is_none));
}
