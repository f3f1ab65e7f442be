//! Erlang scheduler statistics: `statistics(scheduler_wall_time)` snapshots (the SEEDS §3
//! capture among them), `recon:scheduler_usage/1` and `scheduler:utilization/1`, from the
//! Erlang and Elixir shells, plus malformed variants.

mod mutate;

use netceil_import::{detect, import, Format, ImportOptions, Imported};
use netceil_model::names::{ERLANG_SCHEDULER_UTIL_PCT, ERLANG_SCHEDULER_UTIL_WEIGHTED_PCT};
use netceil_model::{MetricId, Series, Unit};
use proptest::prelude::*;

use mutate::{fixture, seed};

fn opts(interval_s: Option<f64>) -> ImportOptions {
    ImportOptions {
        file: "erl.txt".into(),
        interval_s,
        ..ImportOptions::default()
    }
}

fn read(format: Format, text: &str, interval_s: Option<f64>) -> Imported {
    import(format, text, &opts(interval_s)).unwrap_or_else(|e| panic!("{e}"))
}

fn util(s: &Series, scheduler: &str) -> Vec<Option<f64>> {
    let id = MetricId::new(ERLANG_SCHEDULER_UTIL_PCT).with("scheduler", scheduler);
    s.get(&id)
        .unwrap_or_else(|| panic!("no {id}"))
        .values
        .clone()
}

#[test]
fn seed_snapshots_reproduce_the_published_utilizations() {
    let text = seed("erlang-scheduler-wall-time.txt");
    assert_eq!(detect(&text), Ok(Format::ErlangWallTime));
    let imp = read(Format::ErlangWallTime, &text, None);
    let s = &imp.run.series;
    assert_eq!(s.t_s, vec![0.0], "one pair, interval unknown");
    assert_eq!(s.interval_s, 0.0);
    // (5441358 − 4806254) / (171623960966 − 156079013592)
    let s2 = util(s, "2")[0].unwrap() / 100.0;
    assert!((s2 - 635_104.0 / 15_544_947_374.0).abs() < 1e-15, "{s2}");
    assert_eq!(format!("{s2:.2e}"), "4.09e-5");
    let s1 = util(s, "1")[0].unwrap() / 100.0;
    assert!((s1 - 5300.0 / 15_544_949_981.0).abs() < 1e-15);
    let mean = s.total(ERLANG_SCHEDULER_UTIL_PCT).unwrap().values[0].unwrap();
    let by_hand: f64 = ["1", "2", "3", "4"]
        .iter()
        .map(|k| util(s, k)[0].unwrap())
        .sum::<f64>()
        / 4.0;
    assert!((mean - by_hand).abs() < 1e-12);
    assert_eq!(
        s.get(&MetricId::new(ERLANG_SCHEDULER_UTIL_PCT).with("scheduler", "2"))
            .unwrap()
            .unit,
        Unit::Percent
    );
    assert!(
        imp.run
            .notes
            .iter()
            .any(|n| n.starts_with("scheduler 2: utilization 4.086e-5")),
        "{:?}",
        imp.run.notes
    );
    assert!(imp
        .run
        .notes
        .iter()
        .any(|n| n.contains("time between snapshots unknown")));
    assert!(imp.warnings.is_empty(), "{:?}", imp.warnings);
}

#[test]
fn interval_option_places_rows_in_time() {
    let imp = read(
        Format::ErlangWallTime,
        &seed("erlang-scheduler-wall-time.txt"),
        Some(15.0),
    );
    assert_eq!(imp.run.series.t_s, vec![15.0]);
    assert_eq!(imp.run.series.interval_s, 15.0);
}

#[test]
fn elixir_shell_with_dirty_schedulers() {
    let text = fixture("erlang/elixir-iex-dirty-schedulers.txt");
    assert_eq!(detect(&text), Ok(Format::ErlangWallTime));
    let s = read(Format::ErlangWallTime, &text, Some(5.0)).run.series;
    assert_eq!(
        s.by_name(ERLANG_SCHEDULER_UTIL_PCT).count(),
        17,
        "16 schedulers and the mean"
    );
    assert!((util(&s, "5")[0].unwrap() - 100.0 * 1e6 / 5e9).abs() < 1e-9);
    assert!(
        (util(&s, "9")[0].unwrap() - 100.0 * 1e5 / 5e9).abs() < 1e-9,
        "a dirty scheduler"
    );
    assert_eq!(util(&s, "8")[0], Some(0.0));
}

#[test]
fn three_snapshots_give_two_rows_and_banner_brackets_are_ignored() {
    let text = fixture("erlang/erlang-three-snapshots.txt");
    let imp = read(Format::ErlangWallTime, &text, None);
    let s = &imp.run.series;
    assert_eq!(s.t_s, vec![1.0, 2.0], "numbered rows without an interval");
    assert_eq!(util(s, "1"), vec![Some(50.0), Some(50.0)]);
    assert_eq!(util(s, "3"), vec![Some(0.0), Some(10.0)]);
    assert!(imp
        .run
        .notes
        .iter()
        .any(|n| n.contains("rows are numbered")));
    let s = read(Format::ErlangWallTime, &text, Some(2.0)).run.series;
    assert_eq!(s.t_s, vec![2.0, 4.0]);
}

#[test]
fn wall_time_malformed() {
    let e = import(
        Format::ErlangWallTime,
        "1> statistics(scheduler_wall_time).\nundefined\n",
        &opts(None),
    )
    .unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.found.contains("undefined"), "{e}");
    let one = "[{1,10,100},{2,20,100}]\n";
    let e = import(Format::ErlangWallTime, one, &opts(None)).unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.found.contains("one snapshot only"), "{e}");
    assert_ne!(detect("[{1, 2}]").ok(), Some(Format::ErlangWallTime));
    // Times that go backwards: no value, and the reason is kept.
    let reset = "[{1,10,100},{2,20,100}]\n[{1,5,50},{2,30,200}]\n";
    let imp = read(Format::ErlangWallTime, reset, None);
    assert_eq!(util(&imp.run.series, "2"), vec![Some(10.0)]);
    assert!(imp
        .run
        .series
        .missing
        .iter()
        .any(|m| m.metric.contains("scheduler=1") && m.reason.contains("reset")));
    // Cut inside the second snapshot: its whole tuples are used.
    let seed_text = seed("erlang-scheduler-wall-time.txt");
    let cut = &seed_text[..seed_text.find("{3,21103").unwrap() + 4];
    let imp = read(Format::ErlangWallTime, cut, None);
    assert_eq!(
        imp.run.series.by_name(ERLANG_SCHEDULER_UTIL_PCT).count(),
        3,
        "schedulers 1, 4 and the mean"
    );
    assert!(
        imp.warnings.iter().any(|w| w.contains("cut short")),
        "{:?}",
        imp.warnings
    );
}

#[test]
fn recon_scheduler_usage_with_interval_from_the_call() {
    let text = fixture("erlang/recon-scheduler-usage.txt");
    assert_eq!(detect(&text), Ok(Format::ErlangSchedulerUsage));
    let imp = read(Format::ErlangSchedulerUsage, &text, None);
    let s = &imp.run.series;
    assert_eq!(s.t_s, vec![1.0, 2.0]);
    assert_eq!(s.interval_s, 1.0);
    let s2 = util(s, "2");
    assert!(
        (s2[0].unwrap() - 86.06).abs() < 1e-9 && (s2[1].unwrap() - 88.9).abs() < 1e-9,
        "{s2:?}"
    );
    let mean = s.total(ERLANG_SCHEDULER_UTIL_PCT).unwrap().values[0].unwrap();
    assert!((mean - (85.81 + 86.06 + 10.12 + 0.04) / 4.0).abs() < 1e-9);
}

#[test]
fn scheduler_module_output_erlang_and_elixir() {
    let text = fixture("erlang/scheduler-utilization-erlang.txt");
    assert_eq!(detect(&text), Ok(Format::ErlangSchedulerUsage));
    let s = read(Format::ErlangSchedulerUsage, &text, None).run.series;
    assert_eq!(s.t_s, vec![1.0]);
    let total = s.total(ERLANG_SCHEDULER_UTIL_PCT).unwrap().values[0].unwrap();
    assert!(
        (total - 26.01).abs() < 1e-9,
        "the tool's own total, not the mean: {total}"
    );
    let weighted = s.total(ERLANG_SCHEDULER_UTIL_WEIGHTED_PCT).unwrap().values[0].unwrap();
    assert!((weighted - 52.02).abs() < 1e-9);
    let cpu5 = MetricId::new(ERLANG_SCHEDULER_UTIL_PCT)
        .with("scheduler", "5")
        .with("type", "dirty_cpu");
    assert_eq!(s.get(&cpu5).unwrap().values, vec![Some(0.0)]);
    let s = read(
        Format::ErlangSchedulerUsage,
        &fixture("erlang/scheduler-utilization-elixir.txt"),
        None,
    )
    .run
    .series;
    let n1 = MetricId::new(ERLANG_SCHEDULER_UTIL_PCT)
        .with("scheduler", "1")
        .with("type", "normal");
    assert!((s.get(&n1).unwrap().values[0].unwrap() - 4.9101e-3).abs() < 1e-12);
}

#[test]
fn usage_malformed() {
    let e = import(Format::ErlangSchedulerUsage, "nothing here\n", &opts(None)).unwrap_err();
    assert!(e.expected.contains("recon:scheduler_usage"), "{e}");
    // Usage above 1 is not a ratio.
    assert_ne!(
        detect("[{1,1.5},{2,0.2}]").ok(),
        Some(Format::ErlangSchedulerUsage)
    );
    // No interval anywhere: rows are numbered and the note says so.
    let imp = read(Format::ErlangSchedulerUsage, "[{1,0.5},{2,0.25}]\n", None);
    assert_eq!(imp.run.series.t_s, vec![0.0]);
    assert!(imp
        .run
        .notes
        .iter()
        .any(|n| n.contains("interval of some samples is unknown")));
}

#[test]
fn scheduler_sample_all_keeps_each_schedulers_type() {
    let text = fixture("erlang/scheduler-sample-all.txt");
    assert_eq!(detect(&text), Ok(Format::ErlangWallTime));
    let s = read(Format::ErlangWallTime, &text, Some(1.0)).run.series;
    let typed = |id: &str, kind: &str| {
        s.get(
            &MetricId::new(ERLANG_SCHEDULER_UTIL_PCT)
                .with("scheduler", id)
                .with("type", kind),
        )
        .unwrap_or_else(|| panic!("no scheduler {id} {kind}"))
        .values[0]
            .unwrap()
    };
    assert!((typed("1", "normal") - 80.0).abs() < 1e-9);
    assert!((typed("3", "dirty_cpu") - 50.0).abs() < 1e-9);
    assert!((typed("5", "dirty_io") - 100.0).abs() < 1e-9);
    // The mean leaves dirty I/O schedulers out: (80 + 10 + 50 + 0) / 4.
    let mean = s.total(ERLANG_SCHEDULER_UTIL_PCT).unwrap().values[0].unwrap();
    assert!((mean - 35.0).abs() < 1e-9, "{mean}");
    // An Elixir sample: atoms with colons, spaces after commas.
    let ex = "iex(1)> s0 = :scheduler.sample_all()\n{:scheduler_wall_time_all, [{:normal, 1, 10, 100}, {:cpu, 2, 0, 100}]}\niex(2)> s1 = :scheduler.sample_all()\n{:scheduler_wall_time_all, [{:normal, 1, 60, 200}, {:cpu, 2, 0, 200}]}\n";
    let s = read(Format::ErlangWallTime, ex, None).run.series;
    let n1 = MetricId::new(ERLANG_SCHEDULER_UTIL_PCT)
        .with("scheduler", "1")
        .with("type", "normal");
    assert_eq!(s.get(&n1).unwrap().values, vec![Some(50.0)]);
}

#[test]
fn sample_all_malformed() {
    // An unknown scheduler type is not a wall-time entry.
    let bad = "{scheduler_wall_time_all,[{turbo,1,10,100}]}\n{scheduler_wall_time_all,[{turbo,1,20,200}]}\n";
    let why = netceil_import::formats::erlang_wall_time::sniff(bad).unwrap_err();
    assert!(why.contains("normal|cpu|io"), "{why}");
    // One sample only: nothing to take the difference of, at its line.
    let one = "1> scheduler:sample_all().\n{scheduler_wall_time_all,[{normal,1,10,100}]}\n";
    let e = import(Format::ErlangWallTime, one, &opts(None)).unwrap_err();
    assert_eq!(e.line, 2, "{e}");
}

#[test]
fn recon_node_stats_print_gives_rates_and_scheduler_usage() {
    let text = fixture("erlang/recon-node-stats-print.txt");
    assert_eq!(detect(&text), Ok(Format::ReconNodeStats));
    let imp = read(Format::ReconNodeStats, &text, None);
    let s = &imp.run.series;
    assert_eq!(s.t_s, vec![1.0, 2.0, 3.0], "1000 ms from the call");
    assert_eq!(s.interval_s, 1.0);
    let v = |name: &str| -> Vec<f64> {
        s.total(name)
            .unwrap_or_else(|| panic!("no {name}"))
            .values
            .iter()
            .map(|v| v.unwrap())
            .collect()
    };
    assert_eq!(v("erlang_run_queue"), [0.0, 3.0, 2.0]);
    assert_eq!(
        v("erlang_io_out_bytes_per_s"),
        [1_883_136.0, 1_890_304.0, 1_887_232.0]
    );
    assert_eq!(v("erlang_reductions_per_s")[0], 12_851_340.0);
    assert_eq!(v("erlang_memory_total_bytes")[2], 61_320_112.0);
    assert_eq!(util(s, "1"), vec![Some(99.68), Some(99.81), Some(99.75)]);
    let mean = v(ERLANG_SCHEDULER_UTIL_PCT)[0];
    assert!((mean - (99.68 + 15.33 + 8.21 + 4.12) / 4.0).abs() < 1e-9);
    assert_eq!(
        s.total("erlang_io_out_bytes_per_s").unwrap().unit,
        Unit::BytesPerSecond
    );
}

#[test]
fn recon_node_stats_list_from_elixir() {
    let text = fixture("erlang/recon-node-stats-list-elixir.txt");
    assert_eq!(detect(&text), Ok(Format::ReconNodeStats));
    let s = read(Format::ReconNodeStats, &text, None).run.series;
    assert_eq!(s.t_s, vec![0.5, 1.0]);
    let out = s.total("erlang_io_out_bytes_per_s").unwrap();
    assert_eq!(out.values, vec![Some(4096.0), Some(8192.0)]);
    assert!(
        s.total(ERLANG_SCHEDULER_UTIL_PCT).is_none(),
        "this recon had no scheduler_usage"
    );
}

#[test]
fn recon_node_stats_malformed() {
    // Without an interval, increments stay per sample and the note says so.
    let bare = "{[{process_count,1},{run_queue,0}],[{bytes_in,10},{bytes_out,20}]}\n";
    let imp = read(Format::ReconNodeStats, bare, None);
    assert_eq!(
        imp.run
            .series
            .total("erlang_io_in_bytes_per_sample")
            .unwrap()
            .values,
        vec![Some(10.0)]
    );
    assert!(imp
        .run
        .notes
        .iter()
        .any(|n| n.contains("interval is unknown")));
    // A sample cut short: the whole ones import, the cut one is named.
    let text = fixture("erlang/recon-node-stats-print.txt");
    let cut = &text[..text.find("{bytes_out,1887232}").unwrap()];
    let imp = read(Format::ReconNodeStats, cut, None);
    assert_eq!(imp.run.series.len(), 2);
    assert!(
        imp.warnings
            .iter()
            .any(|w| w.contains("line 30: the sample starting here is cut short")),
        "{:?}",
        imp.warnings
    );
    // Only a cut sample: an error at its line.
    let e = import(Format::ReconNodeStats, &text[..200], &opts(None)).unwrap_err();
    assert_eq!(e.line, 2, "{e}");
    // Not node stats at all.
    let e = import(Format::ReconNodeStats, "[{1,0.5}]\n", &opts(None)).unwrap_err();
    assert!(e.expected.contains("process_count"), "{e}");
    // A value that is not a number is skipped and named.
    let odd = "1> recon:node_stats_print(1, 1000).\n{[{process_count,1},{run_queue,x}],[{bytes_in,10}]}\n";
    let imp = read(Format::ReconNodeStats, odd, None);
    assert!(
        imp.warnings.iter().any(|w| w.contains("run_queue")),
        "{:?}",
        imp.warnings
    );
}

// ---------------------------------------------------------------- fuzz

fn corpus() -> Vec<(Format, &'static str, String)> {
    vec![
        (
            Format::ErlangWallTime,
            "seeds/erlang-scheduler-wall-time.txt",
            seed("erlang-scheduler-wall-time.txt"),
        ),
        (
            Format::ErlangWallTime,
            "erlang/elixir-iex-dirty-schedulers.txt",
            fixture("erlang/elixir-iex-dirty-schedulers.txt"),
        ),
        (
            Format::ErlangWallTime,
            "erlang/erlang-three-snapshots.txt",
            fixture("erlang/erlang-three-snapshots.txt"),
        ),
        (
            Format::ErlangSchedulerUsage,
            "erlang/recon-scheduler-usage.txt",
            fixture("erlang/recon-scheduler-usage.txt"),
        ),
        (
            Format::ErlangSchedulerUsage,
            "erlang/scheduler-utilization-erlang.txt",
            fixture("erlang/scheduler-utilization-erlang.txt"),
        ),
        (
            Format::ErlangSchedulerUsage,
            "erlang/scheduler-utilization-elixir.txt",
            fixture("erlang/scheduler-utilization-elixir.txt"),
        ),
        (
            Format::ErlangWallTime,
            "erlang/scheduler-sample-all.txt",
            fixture("erlang/scheduler-sample-all.txt"),
        ),
        (
            Format::ReconNodeStats,
            "erlang/recon-node-stats-print.txt",
            fixture("erlang/recon-node-stats-print.txt"),
        ),
        (
            Format::ReconNodeStats,
            "erlang/recon-node-stats-list-elixir.txt",
            fixture("erlang/recon-node-stats-list-elixir.txt"),
        ),
    ]
}

proptest! {
    // Integration tests have no lib.rs for proptest to keep regressions beside; the
    // corpus and seeds are in the test, and a failure prints its minimal case.
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn fuzz_erlang_readers(pick in any::<prop::sample::Index>(), muts in prop::collection::vec(mutate::mutation(), 1..4)) {
        let corpus = corpus();
        let (format, _, text) = &corpus[pick.index(corpus.len())];
        let text = mutate::apply(text, &muts);
        let _own = mutate::check(*format, &text)?;
    }
}

/// Every fixture of the corpus under the fixed mutations: no reader panics, every refusal
/// names the file, a line and what was expected, and the outcomes are what the mutations
/// imply (see `mutate::sweep`).
#[test]
fn fixed_mutations_of_every_erlang_fixture() {
    for (format, name, text) in corpus() {
        mutate::sweep(format, name, &text, true);
    }
}
