//! pidstat text reports recorded on a 2-vCPU VM with sysstat 12.6.1 (`pidstat 1 2`,
//! `pidstat -t -w 1 1`, `pidstat -u -w -h 1 1`), read into the per-process and per-thread
//! series netceil's sampler writes; then malformed input.

mod mutate;

use netceil_import::formats::pidstat;
use netceil_import::{Format, Imported};
use netceil_model::{names as n, MetricId};

use mutate::{fixture, opts, sweep};

fn load(name: &str) -> Imported {
    let text = fixture(&format!("pidstat/{name}"));
    pidstat::import(&text, &opts(name)).unwrap_or_else(|e| panic!("{e}"))
}

fn id(name: &str, labels: &[(&str, &str)]) -> MetricId {
    let mut id = MetricId::new(name);
    for (k, v) in labels {
        id = id.with(*k, *v);
    }
    id
}

fn values(i: &Imported, id: &MetricId) -> Vec<Option<f64>> {
    i.run
        .series
        .get(id)
        .unwrap_or_else(|| panic!("no metric {id}"))
        .values
        .clone()
}

#[test]
fn pidstat_is_detected_before_sar() {
    mutate::assert_detected(
        "pidstat",
        &[
            "pidstat-1-2.txt",
            "pidstat-t-w-1-1.txt",
            "pidstat-u-w-h-1-1.txt",
        ],
        Format::Pidstat,
    );
    // sar and mpstat reports are not pidstat.
    for name in ["sar-u-24h.txt", "mpstat-P-ALL-24h.txt", "sar-A-12h.txt"] {
        assert!(
            pidstat::sniff(&fixture(&format!("sysstat/{name}"))).is_err(),
            "{name}"
        );
    }
}

#[test]
fn process_rows_are_the_samplers_proc_cpu_pct() {
    let i = load("pidstat-1-2.txt");
    assert_eq!(i.run.series.t_s, [1.0, 2.0]);
    // kdamond.0 (pid 71) ran on CPU 0 both times: 2.86 % then 2.97 %.
    let kd = id(
        n::PROC_CPU_PCT,
        &[("pid", "71"), ("comm", "kdamond.0"), ("cpu", "0")],
    );
    assert_eq!(values(&i, &kd), [Some(2.86), Some(2.97)]);
    let wait = id("pidstat_wait_pct", &[("pid", "71"), ("comm", "kdamond.0")]);
    assert_eq!(values(&i, &wait), [Some(6.67), Some(11.88)]);
    assert_eq!(i.run.meta.host.cpus, Some(2));
    assert_eq!(i.run.meta.host.hostname.as_deref(), Some("vm"));
    assert!(i.run.notes.iter().any(|n| n.contains("Average:")));
    assert!(i.warnings.is_empty(), "{:?}", i.warnings);
    // No thread series without -t: a process's CPU is not one thread's.
    assert!(i.run.series.by_name(n::THREAD_CPU_PCT).next().is_none());
}

#[test]
fn thread_rows_are_the_samplers_thread_series() {
    let i = load("pidstat-t-w-1-1.txt");
    assert_eq!(i.run.series.t_s, [2.0]);
    assert_eq!(load("pidstat-u-w-h-1-1.txt").run.series.t_s, [1.0]);
    let rcu = [("pid", "15"), ("tid", "15"), ("comm", "rcu_preempt")];
    assert_eq!(
        values(&i, &id(n::THREAD_VOLUNTARY_CS_PER_S, &rcu)),
        [Some(70.27)]
    );
    // A thread whose process row was not printed: `(process)__thread`.
    let worker = [("pid", "1"), ("tid", "68"), ("comm", "tokio-rt-worker")];
    assert_eq!(
        values(&i, &id(n::THREAD_VOLUNTARY_CS_PER_S, &worker)),
        [Some(0.90)]
    );
    let h = load("pidstat-u-w-h-1-1.txt");
    let ks = [("pid", "14"), ("comm", "ksoftirqd/0")];
    assert_eq!(values(&h, &id("pidstat_cswch_per_s", &ks)), [Some(5.56)]);
    assert_eq!(
        values(
            &h,
            &id(
                n::PROC_CPU_PCT,
                &[("pid", "14"), ("comm", "ksoftirqd/0"), ("cpu", "0")]
            )
        ),
        [Some(0.93)]
    );
}

#[test]
fn malformed_reports_name_the_line_and_column() {
    let text = fixture("pidstat/pidstat-1-2.txt").replacen(
        "    2.86     0  kdamond.0",
        "    2.8x     0  kdamond.0",
        1,
    );
    let e = pidstat::import(&text, &opts("p.txt")).unwrap_err();
    assert_eq!((e.file.as_str(), e.line, e.column), ("p.txt", 6, Some(8)));
    assert!(e.expected.contains("a number under '%CPU'"), "{e}");

    // A row cut short inside the report is an error; as the last line, a warning.
    let text = fixture("pidstat/pidstat-1-2.txt").replacen("    2.86     0  kdamond.0", "", 1);
    let e = pidstat::import(&text, &opts("p.txt")).unwrap_err();
    assert_eq!(e.line, 6);
    let cut = "01:31:37  UID  PID  %usr %system  %guest   %wait    %CPU   CPU  Command\n01:31:38  0  1  0.00  0.95  0.00  0.00  0.95  0  process_api\n01:31:39  0  1  0.00\n";
    let i = pidstat::import(cut, &opts("p.txt")).unwrap();
    assert!(
        i.warnings[0].contains("line 3: ignored a truncated last line"),
        "{:?}",
        i.warnings
    );

    // Data before any header.
    let e = pidstat::import("01:31:38  0  1  0.00  process_api\n", &opts("p.txt")).unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.expected.contains("a header"), "{e}");

    // Since-boot averages (pidstat without an interval) are skipped with a warning.
    let boot = "01:31:37  UID  PID  %CPU  CPU  Command\n01:31:37  0  1  0.50  0  init\n";
    let i = pidstat::import(boot, &opts("p.txt")).unwrap();
    assert!(i.run.series.t_s.is_empty());
    assert!(
        i.warnings.iter().any(|w| w.contains("since boot")),
        "{:?}",
        i.warnings
    );
}

#[test]
fn pidstat_survives_mutation() {
    let text = fixture("pidstat/pidstat-1-2.txt");
    sweep(Format::Pidstat, "pidstat-1-2.txt", &text, true);
}
