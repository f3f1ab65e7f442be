use super::*;
use netceil_model::{LockStat, MetricId, Unit};

/// A log of `format` from `file`: rows ending at `t_s` (`interval_s` apart nominally), one
/// metric per `(id, values)`.
fn log(
    file: &str,
    format: &str,
    clock: Option<Clock>,
    interval_s: f64,
    t_s: &[f64],
    metrics: &[(MetricId, Vec<Option<f64>>)],
) -> Imported {
    let mut run = Run::new(
        format!("import-{file}"),
        RunSource::Imported {
            format: format.into(),
            file: file.into(),
        },
    );
    run.meta.complete = true;
    run.series = Series::new(interval_s);
    run.series.t_s = t_s.to_vec();
    for (id, values) in metrics {
        assert_eq!(values.len(), t_s.len());
        run.series.metrics.push(Metric {
            id: id.clone(),
            unit: Unit::Percent,
            values: values.clone(),
        });
    }
    Imported {
        run,
        warnings: Vec::new(),
        clock,
    }
}

fn local(s: f64) -> Option<Clock> {
    Some(Clock::Local { s, dated: true })
}

/// 2026-11-18 09:14:00 as naive local seconds.
const T0: f64 = 1_794_993_240.0;

fn id(name: &str) -> MetricId {
    MetricId::new(name)
}

fn values(run: &Run, id: &MetricId) -> Vec<Option<f64>> {
    run.series.get(id).expect("metric kept").values.clone()
}

fn some(v: &[f64]) -> Vec<Option<f64>> {
    v.iter().copied().map(Some).collect()
}

#[test]
fn partial_overlap_keeps_the_shared_seconds_and_carries_coarser_rows_by_time() {
    // A: 1 s rows from T0 for 10 s. B: 5 s rows from T0 + 5 s for 10 s: they share 5..10.
    let a_t: Vec<f64> = (1..=10).map(f64::from).collect();
    let a = log(
        "a.txt",
        "mpstat",
        local(T0),
        1.0,
        &a_t,
        &[(id("cpu_busy_pct"), a_t.iter().map(|t| Some(*t)).collect())],
    );
    let b = log(
        "b.txt",
        "sar",
        local(T0 + 5.0),
        5.0,
        &[5.0, 10.0],
        &[(id("iface_rx_pps"), some(&[100.0, 300.0]))],
    );
    let run = join(vec![a, b]).unwrap();
    // The base is A (finer), cut to its rows inside 5..10, times from the window's start.
    assert_eq!(run.series.t_s, vec![1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(
        values(&run, &id("cpu_busy_pct")),
        some(&[6.0, 7.0, 8.0, 9.0, 10.0])
    );
    // B's first 5 s row (T0+5..T0+10) covers every joined row.
    assert_eq!(values(&run, &id("iface_rx_pps")), some(&[100.0; 5]));
    let intro = &run.notes[0];
    assert!(intro.contains("over the 5 s they share"), "{intro}");
    assert!(intro.contains("a.txt (mpstat, 2026-11-18 09:14:00 to 2026-11-18 09:14:10 local): 5 of its 10 s used (50 %)"), "{intro}");
    assert!(intro.contains("b.txt (sar, 2026-11-18 09:14:05 to 2026-11-18 09:14:15 local): 5 of its 10 s used (50 %)"), "{intro}");
    assert_eq!(
        run.source,
        RunSource::Imported {
            format: "mpstat + sar".into(),
            file: "a.txt + b.txt".into()
        }
    );
}

#[test]
fn a_row_straddling_two_joined_rows_gives_each_its_time_weighted_mean() {
    // Base rows of 2 s from 0; the other log's rows of 3 s: 0..3 = 10, 3..6 = 40.
    let a = log(
        "a",
        "sar",
        local(T0),
        2.0,
        &[2.0, 4.0, 6.0],
        &[(id("x"), some(&[1.0, 1.0, 1.0]))],
    );
    let b = log(
        "b",
        "pidstat",
        local(T0),
        3.0,
        &[3.0, 6.0],
        &[(id("y"), some(&[10.0, 40.0]))],
    );
    let run = join(vec![b, a]).unwrap();
    assert_eq!(run.series.t_s, vec![2.0, 4.0, 6.0]);
    // Row 2..4: 1 s of 10 and 1 s of 40.
    assert_eq!(values(&run, &id("y")), some(&[10.0, 25.0, 40.0]));
}

#[test]
fn logs_that_do_not_overlap_are_refused_naming_both_and_their_ranges() {
    let a = log(
        "early.txt",
        "mpstat",
        local(T0),
        1.0,
        &[1.0, 2.0],
        &[(id("x"), some(&[1.0, 2.0]))],
    );
    let b = log(
        "late.txt",
        "sar",
        local(T0 + 3600.0),
        1.0,
        &[1.0, 2.0],
        &[(id("y"), some(&[1.0, 2.0]))],
    );
    let err = join(vec![a, b]).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, JoinError::NoOverlap { .. }));
    assert!(
        text.contains("early.txt (2026-11-18 09:14:00 to 2026-11-18 09:14:02 local)"),
        "{text}"
    );
    assert!(
        text.contains("late.txt (2026-11-18 10:14:00 to 2026-11-18 10:14:02 local)"),
        "{text}"
    );
    assert!(text.contains("do not overlap"), "{text}");
}

#[test]
fn logs_without_clock_times_are_taken_to_start_together_and_the_notes_say_so() {
    let a = log(
        "vmstat.txt",
        "vmstat-linux",
        None,
        1.0,
        &[1.0, 2.0, 3.0, 4.0],
        &[(id("x"), some(&[1.0, 2.0, 3.0, 4.0]))],
    );
    let b = log(
        "table.tsv",
        "table",
        None,
        2.0,
        &[2.0, 4.0, 6.0],
        &[(id("y"), some(&[10.0, 20.0, 30.0]))],
    );
    let run = join(vec![a, b]).unwrap();
    assert_eq!(run.series.t_s, vec![1.0, 2.0, 3.0, 4.0]);
    assert_eq!(values(&run, &id("y")), some(&[10.0, 10.0, 20.0, 20.0]));
    for f in ["vmstat.txt", "table.tsv"] {
        assert!(
            run.notes
                .iter()
                .any(|n| n.starts_with(&format!("{f}: no clock times"))),
            "{f}: {:#?}",
            run.notes
        );
    }
    assert_eq!(run.meta.started_unix_s, 0.0);
}

#[test]
fn a_snapshot_pair_without_time_covers_the_whole_window() {
    let t: Vec<f64> = (1..=6).map(f64::from).collect();
    let os = log(
        "mpstat.txt",
        "mpstat",
        local(T0),
        1.0,
        &t,
        &[(id("cpu_busy_pct"), some(&[50.0; 6]))],
    );
    // One pair: interval 0, one row at t = 0 (as the wall-time reader gives it).
    let one = log(
        "wall.txt",
        "erlang-wall-time",
        None,
        0.0,
        &[0.0],
        &[(id("erlang_scheduler_util_pct"), some(&[7.0]))],
    );
    let run = join(vec![os.clone(), one]).unwrap();
    assert_eq!(
        values(&run, &id("erlang_scheduler_util_pct")),
        some(&[7.0; 6])
    );
    assert!(
        run.notes
            .iter()
            .any(|n| n
                .starts_with("wall.txt: its one row (a pair of snapshots) has no time of its own")),
        "{:#?}",
        run.notes
    );
    // Three snapshots (two rows numbered 1, 2): each covers half the window.
    let two = log(
        "wall3.txt",
        "erlang-wall-time",
        None,
        0.0,
        &[1.0, 2.0],
        &[(id("erlang_scheduler_util_pct"), some(&[5.0, 9.0]))],
    );
    let run = join(vec![os, two]).unwrap();
    assert_eq!(
        values(&run, &id("erlang_scheduler_util_pct")),
        some(&[5.0, 5.0, 5.0, 9.0, 9.0, 9.0])
    );
}

#[test]
fn a_name_both_logs_give_is_kept_from_the_finer_log_never_summed() {
    let fine = log(
        "mpstat.txt",
        "mpstat",
        local(T0),
        1.0,
        &[1.0, 2.0],
        &[(id("cpu_busy_pct"), some(&[40.0, 60.0]))],
    );
    let coarse = log(
        "sar.txt",
        "sar",
        local(T0),
        2.0,
        &[2.0],
        &[(id("cpu_busy_pct"), some(&[45.0]))],
    );
    // Given coarse first: the finer still wins.
    let run = join(vec![coarse, fine]).unwrap();
    let kept: Vec<&Metric> = run
        .series
        .metrics
        .iter()
        .filter(|m| m.id == id("cpu_busy_pct"))
        .collect();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].values, some(&[40.0, 60.0]));
    assert!(
        run.notes.iter().any(
            |n| n.starts_with("sar.txt: cpu_busy_pct also given by mpstat.txt")
                && n.contains("never summed")
        ),
        "{:#?}",
        run.notes
    );
}

#[test]
fn at_the_same_interval_the_log_with_per_cpu_detail_gives_the_shared_names() {
    let per_cpu = MetricId::new("cpu_busy_pct").with("cpu", "0");
    let totals = log(
        "sar.txt",
        "sar",
        local(T0),
        1.0,
        &[1.0],
        &[(id("cpu_busy_pct"), some(&[10.0]))],
    );
    let detail = log(
        "mpstat.txt",
        "mpstat",
        local(T0),
        1.0,
        &[1.0],
        &[
            (id("cpu_busy_pct"), some(&[30.0])),
            (per_cpu.clone(), some(&[30.0])),
        ],
    );
    let run = join(vec![totals, detail]).unwrap();
    assert_eq!(values(&run, &id("cpu_busy_pct")), some(&[30.0]));
    assert_eq!(values(&run, &per_cpu), some(&[30.0]));
}

#[test]
fn cpu_counts_that_disagree_name_both_logs() {
    let mut a = log(
        "a.txt",
        "mpstat",
        local(T0),
        1.0,
        &[1.0],
        &[(id("x"), some(&[1.0]))],
    );
    let mut b = log(
        "b.txt",
        "sar",
        local(T0),
        1.0,
        &[1.0],
        &[(id("y"), some(&[1.0]))],
    );
    a.run.meta.host.cpus = Some(8);
    b.run.meta.host.cpus = Some(4);
    let err = join(vec![a.clone(), b.clone()]).unwrap_err();
    assert_eq!(
        err,
        JoinError::CpusDisagree {
            a: "a.txt".into(),
            a_cpus: 8,
            b: "b.txt".into(),
            b_cpus: 4
        }
    );
    assert!(err
        .to_string()
        .contains("a.txt says the machine has 8 CPUs and b.txt says 4"));
    b.run.meta.host.cpus = Some(8);
    assert_eq!(join(vec![a, b]).unwrap().meta.host.cpus, Some(8));
}

#[test]
fn one_log_is_not_a_join() {
    let a = log(
        "a.txt",
        "mpstat",
        local(T0),
        1.0,
        &[1.0],
        &[(id("x"), some(&[1.0]))],
    );
    assert_eq!(join(vec![a]).unwrap_err(), JoinError::TooFew(1));
}

#[test]
fn utc_and_zoneless_clocks_are_not_compared_and_the_notes_say_so() {
    let mut iperf = log(
        "i.json",
        "iperf3",
        None,
        1.0,
        &[1.0, 2.0, 3.0],
        &[(id("x"), some(&[1.0, 2.0, 3.0]))],
    );
    iperf.run.meta.started_unix_s = 1_794_301_964.0;
    let sar = log(
        "s.txt",
        "sar",
        local(T0 + 7200.0),
        1.0,
        &[1.0, 2.0, 3.0, 4.0],
        &[(id("y"), some(&[5.0, 6.0, 7.0, 8.0]))],
    );
    let run = join(vec![sar, iperf]).unwrap();
    assert_eq!(run.series.t_s.len(), 3, "both taken to start together");
    assert!(
        run.notes
            .iter()
            .any(|n| n.contains("cannot be compared without the machine's time zone")),
        "{:#?}",
        run.notes
    );
    // The base is the finest with a clock, sar here (more rows do not matter, the order given does).
    assert_eq!(values(&run, &id("y")), some(&[5.0, 6.0, 7.0]));
}

#[test]
fn locks_are_listed_together_and_results_come_from_one_log() {
    let t = [1.0, 2.0];
    let mut a = log(
        "vmstat.txt",
        "vmstat-linux",
        None,
        1.0,
        &t,
        &[(id("x"), some(&[1.0, 2.0]))],
    );
    let mut p1 = log("perf.txt", "perf-lock", None, 0.0, &[], &[]);
    let mut p2 = log("lock_stat.txt", "lock-stat", None, 0.0, &[], &[]);
    p1.run.locks.push(LockStat {
        name: "a".into(),
        wait_total_s: 1.0,
        ..Default::default()
    });
    p2.run.locks.push(LockStat {
        name: "a".into(),
        wait_total_s: 2.0,
        ..Default::default()
    });
    a.run.notes.push("a note".into());
    let run = join(vec![a, p1, p2]).unwrap();
    assert_eq!(
        run.locks.iter().map(|l| l.wait_total_s).collect::<Vec<_>>(),
        vec![1.0, 2.0]
    );
    assert!(run
        .notes
        .iter()
        .any(|n| n.contains("perf.txt and lock_stat.txt are listed together")));
    assert!(
        run.notes.iter().any(|n| n == "vmstat.txt: a note"),
        "{:#?}",
        run.notes
    );
    assert_eq!(run.series.t_s, t.to_vec());
}

#[test]
fn the_first_log_with_results_gives_them_and_the_others_are_noted() {
    let t = [1.0, 2.0];
    let mut i1 = log(
        "one.json",
        "iperf3",
        None,
        1.0,
        &t,
        &[(id("x"), some(&[1.0, 2.0]))],
    );
    let mut i2 = log(
        "two.json",
        "iperf3",
        None,
        1.0,
        &t,
        &[(id("y"), some(&[1.0, 2.0]))],
    );
    i1.run.results = Some(netceil_model::Results {
        duration_s: 2.0,
        ..Default::default()
    });
    i2.run.results = Some(netceil_model::Results {
        duration_s: 9.0,
        ..Default::default()
    });
    let run = join(vec![i1, i2]).unwrap();
    assert_eq!(run.results.map(|r| r.duration_s), Some(2.0));
    assert!(
        run.notes
            .iter()
            .any(|n| n.starts_with("two.json: its workload results are left out: one.json's")),
        "{:#?}",
        run.notes
    );
}

#[test]
fn civil_dates_round_trip() {
    for z in [-1, 0, 59, 20_000, 20_775] {
        let (y, m, d) = civil_from_days(z);
        assert_eq!(days_from_civil(y, m, d), z);
    }
    assert_eq!(clock_words(Kind::LocalDated, T0), "2026-11-18 09:14:00");
}

#[test]
fn sysstat_banner_dates_in_the_locales_sysstat_prints() {
    use crate::formats::sar::banner_day;
    let day = days_from_civil(2026, 11, 18);
    for d in [
        "2026-11-18",
        "11/18/2026",
        "18/11/2026",
        "18.11.2026",
        "11/18/26",
    ] {
        assert_eq!(banner_day(d), Some(day), "{d}");
    }
    assert_eq!(banner_day("13/13/2026"), None);
    assert_eq!(banner_day("yesterday"), None);
}

/// mpstat and a scheduler_wall_time pair through their readers: the joined run has OS CPU
/// and the schedulers' utilization side by side, on mpstat's clock-timed rows.
#[test]
fn real_readers_put_os_cpu_beside_the_schedulers_work() {
    let mpstat = "Linux 6.1.0 (n1) \t11/18/2026 \t_x86_64_\t(2 CPU)\n\n\
09:14:00  CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle\n\
09:14:01  all   40.00    0.00   10.00    0.00    0.00    0.00    0.00    0.00    0.00   50.00\n\
09:14:01    0   40.00    0.00   10.00    0.00    0.00    0.00    0.00    0.00    0.00   50.00\n\
09:14:01    1   40.00    0.00   10.00    0.00    0.00    0.00    0.00    0.00    0.00   50.00\n\n\
09:14:01  CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle\n\
09:14:02  all   40.00    0.00   10.00    0.00    0.00    0.00    0.00    0.00    0.00   50.00\n\
09:14:02    0   40.00    0.00   10.00    0.00    0.00    0.00    0.00    0.00    0.00   50.00\n\
09:14:02    1   40.00    0.00   10.00    0.00    0.00    0.00    0.00    0.00    0.00   50.00\n";
    let wall = "1> statistics(scheduler_wall_time).\n[{1,100,1000},{2,100,1000}]\n\
2> statistics(scheduler_wall_time).\n[{1,150,2000},{2,150,2000}]\n";
    let opts = |f: &str| crate::ImportOptions {
        file: f.into(),
        ..Default::default()
    };
    let a = crate::import(crate::Format::Mpstat, mpstat, &opts("mpstat.txt")).unwrap();
    assert_eq!(a.clock, local(T0));
    let b = crate::import(crate::Format::ErlangWallTime, wall, &opts("wall.txt")).unwrap();
    assert_eq!(b.clock, None);
    let run = join(vec![a, b]).unwrap();
    assert_eq!(run.series.t_s, vec![1.0, 2.0]);
    let util = run
        .series
        .total(netceil_model::names::ERLANG_SCHEDULER_UTIL_PCT)
        .unwrap();
    assert_eq!(util.values, some(&[5.0, 5.0]));
    let idle = run
        .series
        .total(netceil_model::names::CPU_IDLE_PCT)
        .unwrap();
    assert_eq!(idle.values, some(&[50.0, 50.0]));
    assert_eq!(run.meta.host.cpus, Some(2));
}

#[test]
fn logs_with_no_timed_rows_at_all_join_into_one_row() {
    let a = log(
        "wall.txt",
        "erlang-wall-time",
        None,
        0.0,
        &[0.0],
        &[(id("erlang_scheduler_util_pct"), some(&[7.0]))],
    );
    let mut b = log("lockprof.txt", "freebsd-lockprof", None, 0.0, &[], &[]);
    b.run.locks.push(LockStat {
        name: "rtentry".into(),
        wait_total_s: 14.0,
        ..Default::default()
    });
    let run = join(vec![a, b]).unwrap();
    assert_eq!(run.series.t_s, vec![0.0]);
    assert_eq!(values(&run, &id("erlang_scheduler_util_pct")), some(&[7.0]));
    assert_eq!(run.locks.len(), 1);
}
