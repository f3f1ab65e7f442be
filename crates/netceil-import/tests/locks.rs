//! Lock profiles into the Run's lock table: FreeBSD `debug.lock.prof.stats` (the SEEDS §4
//! profile among them), Linux `/proc/lock_stat` and `perf lock contention`, real captures and
//! malformed variants.

mod mutate;

use netceil_import::{detect, import, Format, ImportOptions, Imported};
use proptest::prelude::*;

use mutate::{fixture, seed};

fn opts(file: &str) -> ImportOptions {
    ImportOptions {
        file: file.into(),
        ..ImportOptions::default()
    }
}

fn read(format: Format, text: &str) -> Imported {
    import(format, text, &opts("t.txt")).unwrap_or_else(|e| panic!("{e}"))
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

// ---------------------------------------------------------------- FreeBSD

#[test]
fn seed_profile_imports_and_rtentry_waits_sum_to_14_s() {
    let text = seed("freebsd-lockprof-route-refcount.txt");
    assert_eq!(detect(&text), Ok(Format::FreebsdLockProf));
    let imp = read(Format::FreebsdLockProf, &text);
    let run = &imp.run;
    assert_eq!(run.locks.len(), 10);
    let rtentry: Vec<_> = run.locks.iter().filter(|l| l.name == "rtentry").collect();
    assert_eq!(rtentry.len(), 3);
    let wait: f64 = rtentry.iter().map(|l| l.wait_total_s).sum();
    assert!(close(wait, 14.056_442, 1e-9), "rtentry wait {wait}");
    let first = rtentry[0];
    assert_eq!(
        first.caller.as_deref(),
        Some("net/route.c:197 (sleep mutex)")
    );
    assert_eq!(first.count, 301_477);
    assert_eq!(first.contended, Some(110_104), "contended is cnt_lock");
    assert!(close(first.hold_total_s.unwrap(), 3.562_050, 1e-12));
    assert!(close(first.hold_max_s.unwrap(), 326e-6, 1e-15));
    assert_eq!(first.wait_max_s, None, "this layout has no wait_max");
    // Names with spaces survive.
    assert!(run.locks.iter().any(|l| l.name == "radix node head"));
    assert!(run.locks.iter().any(|l| l.name == "turnstile chain"
        && l.caller.as_deref() == Some("kern/subr_turnstile.c:489 (spin mutex)")));
    // The elision is warned about, and the lock ranking is in the notes.
    assert!(
        imp.warnings.iter().any(|w| w.contains("elision")),
        "{:?}",
        imp.warnings
    );
    assert!(
        run.notes
            .iter()
            .any(|n| n.starts_with("rtentry (sleep mutex): waited 14.056")),
        "{:?}",
        run.notes
    );
    assert!(run.meta.complete);
    assert!(run.run_id.starts_with("import-"));
    assert!(run.findings.is_empty());
}

#[test]
fn freebsd_13_layout_with_wait_max_and_sysctl_prefix() {
    let text = fixture("locks/freebsd-lockprof-13.txt");
    assert_eq!(detect(&text), Ok(Format::FreebsdLockProf));
    let run = read(Format::FreebsdLockProf, &text).run;
    assert_eq!(run.locks.len(), 8);
    let route = &run.locks[0];
    assert_eq!(
        (route.name.as_str(), route.caller.as_deref()),
        ("rtentry", Some("net/route.c:197 (rw)"))
    );
    assert!(close(route.wait_max_s.unwrap(), 1821e-6, 1e-15));
    assert!(close(route.wait_total_s, 9.114_502, 1e-12));
    assert_eq!(
        run.locks[3].name, "ix0:tx(0)",
        "a lock name holding ':' and parentheses"
    );
    assert_eq!(run.locks[6].name, "vm map (user)");
    assert_eq!(
        run.locks[7].caller.as_deref(),
        Some("(unknown):0 (lockmgr)")
    );
    assert!(run.notes.iter().any(|n| n.contains("cnt_hold is 0")));
}

#[test]
fn old_mutex_profiling_has_no_wait_columns() {
    let run = read(
        Format::FreebsdLockProf,
        &fixture("locks/freebsd-mutexprof-6.txt"),
    )
    .run;
    assert_eq!(run.locks.len(), 3);
    assert_eq!(run.locks[0].name, "Giant");
    assert_eq!(
        run.locks[0].caller.as_deref(),
        Some("kern/kern_synch.c:249")
    );
    assert_eq!(run.locks[0].wait_total_s, 0.0);
    assert!(run.notes.iter().any(|n| n.contains("no wait_total column")));
}

#[test]
fn quoted_mail_paste_imports_the_table_and_skips_prose() {
    let text = fixture("locks/freebsd-lockprof-quoted-mail.txt");
    assert_eq!(detect(&text), Ok(Format::FreebsdLockProf));
    let imp = read(Format::FreebsdLockProf, &text);
    assert_eq!(imp.run.locks.len(), 3);
    assert!(
        imp.warnings.iter().any(|w| w.contains("2 elisions")),
        "{:?}",
        imp.warnings
    );
    assert!(
        imp.warnings.iter().any(|w| w.contains("table ends")),
        "{:?}",
        imp.warnings
    );
}

#[test]
fn profiling_window_comes_from_the_interval_option() {
    let text = seed("freebsd-lockprof-route-refcount.txt");
    let o = ImportOptions {
        interval_s: Some(30.0),
        ..opts("p.txt")
    };
    let run = import(Format::FreebsdLockProf, &text, &o).unwrap().run;
    assert_eq!(run.series.t_s, vec![30.0]);
    assert_eq!(run.meta.annotations.interval_s, Some(30.0));
}

#[test]
fn unknown_columns_of_newer_tools_are_read_and_said() {
    let text = "max wait_max total wait_total count avg wait_avg cnt_hold cnt_lock cnt_spin name\n\
                10 2 100 50 7 14 7 0 3 9 net/route.c:197 (rw:rtentry)\n";
    let imp = read(Format::FreebsdLockProf, text);
    assert_eq!(imp.run.locks[0].contended, Some(3));
    assert!((imp.run.locks[0].wait_total_s - 50e-6).abs() < 1e-15);
    assert!(
        imp.warnings
            .iter()
            .any(|w| w.contains("unknown column cnt_spin")),
        "{:?}",
        imp.warnings
    );
    let text = " contended   total wait     max wait     avg wait      node   caller\n\n\
                 3   1.00 ms   0.50 ms   0.33 ms   1   tcp_sendmsg+0x10\n";
    let run = read(Format::PerfLock, text).run;
    assert_eq!(
        (run.locks[0].name.as_str(), run.locks[0].caller.as_deref()),
        ("1", Some("tcp_sendmsg+0x10"))
    );
}

#[test]
fn freebsd_malformed_rows_name_line_and_field() {
    let good = seed("freebsd-lockprof-route-refcount.txt");
    let bad = good.replacen("974 968617", "974 96x617", 1);
    let e = import(Format::FreebsdLockProf, &bad, &opts("p.txt")).unwrap_err();
    assert_eq!((e.line, e.column), (4, Some(2)), "{e}");
    assert!(
        e.to_string()
            .starts_with("p.txt: line 4, column 2: expected a number of microseconds (total)"),
        "{e}"
    );
    // A row missing its name.
    let bad = good.replacen(" net/route.c:147 (sleep mutex:radix node head)", "", 1);
    let e = import(Format::FreebsdLockProf, &bad, &opts("p.txt")).unwrap_err();
    assert_eq!((e.line, e.column), (8, Some(9)), "{e}");
    // No header at all.
    let e = import(Format::FreebsdLockProf, "hello\n1 2 3\n", &opts("p.txt")).unwrap_err();
    assert_eq!(e.line, 1);
    assert!(detect("hello\n").is_err());
    // Header but no rows.
    let e = import(
        Format::FreebsdLockProf,
        "max total count avg cnt_hold cnt_lock name\n",
        &opts("p.txt"),
    )
    .unwrap_err();
    assert!(e.expected.contains("at least one lock row"), "{e}");
}

#[test]
fn freebsd_truncated_last_line_is_skipped_with_a_warning() {
    let good = seed("freebsd-lockprof-route-refcount.txt");
    let cut = &good[..good.len() - 30];
    let imp = read(Format::FreebsdLockProf, cut);
    assert_eq!(imp.run.locks.len(), 9);
    assert!(
        imp.warnings.iter().any(|w| w.contains("cut short")),
        "{:?}",
        imp.warnings
    );
}

// ---------------------------------------------------------------- /proc/lock_stat

#[test]
fn lock_stat_04_with_call_sites() {
    let text = fixture("locks/lock-stat-0.4.txt");
    assert_eq!(detect(&text), Ok(Format::LockStat));
    let imp = read(Format::LockStat, &text);
    let run = &imp.run;
    assert_eq!(run.locks.len(), 5, "{:?}", run.locks);
    let sk = &run.locks[0];
    assert_eq!(sk.name, "&(&sk->sk_lock.slock)->rlock");
    assert_eq!(sk.count, 5_120_331);
    assert_eq!(sk.contended, Some(9022));
    assert!(close(sk.wait_total_s, 0.088_213_77, 1e-12));
    assert!(close(sk.wait_max_s.unwrap(), 512.40e-6, 1e-15));
    assert!(close(sk.hold_total_s.unwrap(), 3.310_211_50, 1e-9));
    assert_eq!(
        sk.caller.as_deref(),
        Some("tcp_v4_rcv+0x9e4/0xb40"),
        "busiest contention point"
    );
    // Both rows of a read/write class share its call sites.
    let w = run
        .locks
        .iter()
        .find(|l| l.name == "&mm->mmap_lock-W")
        .unwrap();
    let r = run
        .locks
        .iter()
        .find(|l| l.name == "&mm->mmap_lock-R")
        .unwrap();
    assert_eq!(w.caller, r.caller);
    assert_eq!(r.caller.as_deref(), Some("do_user_addr_fault+0x1d4/0x510"));
    assert_eq!(
        run.locks
            .iter()
            .find(|l| l.name == "rtnl_mutex")
            .unwrap()
            .caller,
        None
    );
    assert!(run.notes.iter().any(|n| n.starts_with("&rq->__lock/1: waiters at double_rq_lock+0x4f/0x54 (11526); holders at double_rq_lock+0x42/0x54 (5645)")), "{:?}", run.notes);
    assert!(imp.warnings.is_empty(), "{:?}", imp.warnings);
}

#[test]
fn lock_stat_03_and_headerless_grep() {
    let run = read(Format::LockStat, &fixture("locks/lock-stat-0.3.txt")).run;
    assert_eq!(run.locks.len(), 5);
    assert!(
        close(run.locks[0].hold_total_s.unwrap(), 3.310_211_50, 1e-9),
        "0.3 has no -avg columns"
    );
    let text = fixture("locks/lock-stat-0.4-grep.txt");
    assert_eq!(detect(&text), Ok(Format::LockStat));
    let imp = read(Format::LockStat, &text);
    assert_eq!(imp.run.locks.len(), 5);
    assert!(
        imp.warnings.iter().any(|w| w.contains("version 0.4")),
        "{:?}",
        imp.warnings
    );
}

#[test]
fn lock_stat_pasted_in_a_mail_with_prompt_snip_and_signature() {
    let text = fixture("locks/lock-stat-0.4-mail.txt");
    assert_eq!(detect(&text), Ok(Format::LockStat));
    let imp = read(Format::LockStat, &text);
    let names: Vec<&str> = imp.run.locks.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        ["&dev->tx_global_lock", "&(&sk->sk_receive_queue)->rlock"]
    );
    assert!((imp.run.locks[0].wait_total_s - 9.811_020_41).abs() < 1e-9);
    assert_eq!(
        imp.run.locks[0].caller.as_deref(),
        Some("__dev_queue_xmit+0x5e1/0x1010")
    );
    assert!(
        imp.warnings.iter().any(|w| w.contains("1 elision")),
        "{:?}",
        imp.warnings
    );
    assert!(
        imp.warnings.iter().any(|w| w.contains("table ends here")),
        "{:?}",
        imp.warnings
    );
    // The kernel's own warning line is reported, not an error.
    let warned = text.replace("lock_stat version 0.4\n", "lock_stat version 0.4\n*WARNING* lock debugging disabled!! - possibly due to a lockdep warning\n");
    let imp = read(Format::LockStat, &warned);
    assert!(
        imp.warnings
            .iter()
            .any(|w| w.contains("lock debugging was turned off")),
        "{:?}",
        imp.warnings
    );
}

#[test]
fn lock_stat_malformed() {
    let good = fixture("locks/lock-stat-0.4.txt");
    let bad = good.replacen("46             84", "46             8x4", 1);
    let e = import(Format::LockStat, &bad, &opts("lock_stat")).unwrap_err();
    let line = good
        .lines()
        .position(|l| l.contains("&mm->mmap_lock-W:"))
        .unwrap()
        + 1;
    assert_eq!((e.line, e.column), (line, Some(3)), "{e}");
    assert!(e.expected.contains("class row"), "{e}");
    let e = import(
        Format::LockStat,
        "lock_stat version 0.4\n",
        &opts("lock_stat"),
    )
    .unwrap_err();
    assert!(e.expected.contains("at least one lock class"), "{e}");
    // Cut in the middle of a row: the rows before it stay.
    let cut = &good[..good.find("0.00           0.00            120").unwrap()];
    let imp = read(Format::LockStat, cut);
    assert_eq!(imp.run.locks.len(), 3);
    assert!(imp.warnings.iter().any(|w| w.contains("cut short")));
}

// ---------------------------------------------------------------- perf lock contention

#[test]
fn perf_lock_caller_mode_real_capture() {
    let text = fixture("locks/perf-lock-6.1-caller.txt");
    assert_eq!(detect(&text), Ok(Format::PerfLock));
    let run = read(Format::PerfLock, &text).run;
    assert_eq!(run.locks.len(), 14);
    let top = &run.locks[0];
    assert_eq!(
        (top.name.as_str(), top.caller.as_deref()),
        ("spinlock", Some("call_timer_fn+0x29"))
    );
    assert_eq!((top.count, top.contended), (9, Some(9)));
    assert!(close(top.wait_total_s, 124.05e-6, 1e-12));
    assert!(close(top.wait_max_s.unwrap(), 15.97e-6, 1e-12));
    assert_eq!(top.hold_total_s, None);
    assert!(run.notes.iter().any(|n| n.contains("count = contended")));
}

#[test]
fn perf_lock_threads_fields_and_verbose() {
    let run = read(
        Format::PerfLock,
        &fixture("locks/perf-lock-6.1-threads.txt"),
    )
    .run;
    assert_eq!(run.locks.len(), 12);
    assert_eq!(run.locks[0].name, "lto 58yk503600o", "comm with a space");
    assert_eq!(run.locks[0].caller.as_deref(), Some("pid 14080"));
    let run = read(Format::PerfLock, &fixture("locks/perf-lock-6.1-fields.txt")).run;
    assert_eq!(run.locks.len(), 6);
    assert!(
        close(run.locks[0].wait_max_s.unwrap(), 15.97e-6, 1e-12),
        "min wait column in between"
    );
    let imp = read(
        Format::PerfLock,
        &fixture("locks/perf-lock-6.1-verbose.txt"),
    );
    assert_eq!(imp.run.locks.len(), 3);
    assert!(
        imp.run
            .notes
            .iter()
            .any(|n| n.contains("24 call-stack lines")),
        "{:?}",
        imp.run.notes
    );
    assert!(
        imp.warnings.iter().any(|w| w.contains("not rows")),
        "the debug summary is skipped"
    );
}

#[test]
fn perf_lock_wrapped_mail_and_units() {
    let text = fixture("locks/perf-lock-mail-wrapped.txt");
    assert_eq!(detect(&text), Ok(Format::PerfLock));
    let run = read(Format::PerfLock, &text).run;
    assert_eq!(run.locks.len(), 4);
    assert_eq!(run.locks[0].caller.as_deref(), Some("kthread+0x160"));
    assert!(close(run.locks[0].wait_total_s, 612.6, 1e-9), "minutes");
    assert!(close(run.locks[2].wait_total_s, 1.12, 1e-12), "seconds");
    assert!(
        close(run.locks[3].wait_total_s, 950e-9, 1e-15),
        "nanoseconds"
    );
    assert_eq!(run.locks[1].name, "rwlock:W");
}

#[test]
fn perf_lock_address_mode() {
    let run = read(Format::PerfLock, &fixture("locks/perf-lock-addr.txt")).run;
    let names: Vec<&str> = run.locks.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "tasklist_lock (rwlock)",
            "ffff8d01c3b2a440 (spinlock)",
            "mmap_lock (rwsem)",
            "ffff8d0200a01e80"
        ]
    );
    assert!(run.locks.iter().all(|l| l.caller.is_none()));
    // `-- sleep 3` on the pasted command line is the window perf watched.
    assert_eq!(run.series.t_s, vec![3.0]);
    assert!(
        run.notes.iter().any(|n| n.contains("profiled window: 3 s")),
        "{:?}",
        run.notes
    );
}

#[test]
fn perf_lock_malformed() {
    let good = fixture("locks/perf-lock-6.1-caller.txt");
    let bad = good.replacen("56.85 us", "56.85 furlongs", 1);
    let e = import(Format::PerfLock, &bad, &opts("perf.txt")).unwrap_err();
    assert_eq!((e.line, e.column), (4, Some(3)), "{e}");
    assert!(e.expected.contains("time unit"), "{e}");
    let e = import(Format::PerfLock, "no header here\n", &opts("perf.txt")).unwrap_err();
    assert!(e.expected.contains("header"), "{e}");
    // Cut inside the caller of the last row: kept, and flagged.
    let cut = &good[..good.len() - 10];
    let imp = read(Format::PerfLock, cut);
    assert_eq!(imp.run.locks.len(), 14);
    assert!(
        imp.warnings.iter().any(|w| w.contains("may be cut short")),
        "{:?}",
        imp.warnings
    );
    // Cut inside the numbers of the last row: skipped.
    let cut = &good[..good.rfind("12.84 us").unwrap() + 4];
    let imp = read(Format::PerfLock, cut);
    assert_eq!(imp.run.locks.len(), 13);
    assert!(
        imp.warnings.iter().any(|w| w.contains("cut short ('")),
        "{:?}",
        imp.warnings
    );
}

// ---------------------------------------------------------------- fuzz

fn corpus() -> Vec<(Format, &'static str, String)> {
    vec![
        (
            Format::FreebsdLockProf,
            "seeds/freebsd-lockprof-route-refcount.txt",
            seed("freebsd-lockprof-route-refcount.txt"),
        ),
        (
            Format::FreebsdLockProf,
            "locks/freebsd-lockprof-13.txt",
            fixture("locks/freebsd-lockprof-13.txt"),
        ),
        (
            Format::FreebsdLockProf,
            "locks/freebsd-lockprof-quoted-mail.txt",
            fixture("locks/freebsd-lockprof-quoted-mail.txt"),
        ),
        (
            Format::LockStat,
            "locks/lock-stat-0.4.txt",
            fixture("locks/lock-stat-0.4.txt"),
        ),
        (
            Format::LockStat,
            "locks/lock-stat-0.4-grep.txt",
            fixture("locks/lock-stat-0.4-grep.txt"),
        ),
        (
            Format::LockStat,
            "locks/lock-stat-0.4-mail.txt",
            fixture("locks/lock-stat-0.4-mail.txt"),
        ),
        (
            Format::PerfLock,
            "locks/perf-lock-6.1-verbose.txt",
            fixture("locks/perf-lock-6.1-verbose.txt"),
        ),
        (
            Format::PerfLock,
            "locks/perf-lock-mail-wrapped.txt",
            fixture("locks/perf-lock-mail-wrapped.txt"),
        ),
        (
            Format::PerfLock,
            "locks/perf-lock-addr.txt",
            fixture("locks/perf-lock-addr.txt"),
        ),
    ]
}

proptest! {
    // Integration tests have no lib.rs for proptest to keep regressions beside; the
    // corpus and seeds are in the test, and a failure prints its minimal case.
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn fuzz_lock_readers(pick in any::<prop::sample::Index>(), muts in prop::collection::vec(mutate::mutation(), 1..4)) {
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
fn fixed_mutations_of_every_lock_fixture() {
    for (format, name, text) in corpus() {
        mutate::sweep(format, name, &text, true);
    }
}
