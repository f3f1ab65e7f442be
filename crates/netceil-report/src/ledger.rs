//! The verdict's ledger as a person reads it: every resource sized, in ranking order, with
//! what relieving it would gain and why it stands where it does (`netceil show RUN --explain`).

use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, ContentArrangement, Table};
use netceil_model::{EntryState, Ledger, LedgerEntry, Quantity};

use netceil_model::fmt;

fn state_words(s: EntryState) -> &'static str {
    match s {
        EntryState::Binds => "VERDICT",
        EntryState::Symptom => "symptom",
        EntryState::Saturated => "saturated",
        EntryState::Noted => "noted",
        EntryState::NearLimit => "near limit",
        EntryState::Headroom => "headroom",
    }
}

fn quantity(q: &Quantity) -> String {
    fmt::value(q.value, q.unit)
}

/// "97 % (97 % of 100 %: CPU 0)" — the share and the figures it came from.
fn sizing(e: &LedgerEntry) -> String {
    let share = e
        .share
        .map(|s| format!("{:.0} %", s * 100.0))
        .unwrap_or_else(|| fmt::MISSING.to_string());
    match (&e.used, &e.capacity) {
        (Some(u), Some(c)) => format!("{share}: {} of {} ({})", quantity(u), quantity(c), c.how),
        (Some(u), None) => format!("{} {} (capacity unknown)", quantity(u), u.how),
        _ => match &e.errors {
            Some(x) => format!("{} {}", quantity(x), x.how),
            None => share,
        },
    }
}

fn gain(e: &LedgerEntry) -> String {
    match &e.gain {
        Some(g) => match g.factor {
            Some(f) => format!("{f:.2}×"),
            None => "unbounded here".into(),
        },
        None => fmt::MISSING.into(),
    }
}

/// One ledger as a table, the verdict's sentence above it, cut to `width` columns.
pub fn ledger_table(label: &str, ledger: &Ledger, width: u16) -> String {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_content_arrangement(ContentArrangement::Dynamic);
    t.set_width(width);
    t.set_header(vec![
        "#",
        "resource",
        "cause",
        "state",
        "used of capacity",
        "gain",
        "why",
    ]);
    for (i, e) in ledger.entries.iter().enumerate() {
        t.add_row(vec![
            Cell::new(i + 1),
            Cell::new(&e.id),
            Cell::new(&e.cause),
            Cell::new(state_words(e.state)),
            Cell::new(sizing(e)),
            Cell::new(gain(e)),
            Cell::new(&e.why),
        ]);
    }
    let delivered = ledger
        .delivered
        .as_ref()
        .map(|d| {
            format!(
                "gains are against the delivered rate, {} ({})\n",
                quantity(d),
                d.how
            )
        })
        .unwrap_or_default();
    format!("ledger of {label}: {}\n{delivered}{t}\n", ledger.verdict)
}

/// Every ledger of a run (one, or one per part), as tables.
pub fn ledgers_text(ledgers: &[(String, Ledger)], width: u16) -> String {
    ledgers
        .iter()
        .map(|(label, l)| ledger_table(label, l, width))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use netceil_model::{Gain, Resource, Unit};

    #[test]
    fn a_ledger_reads_in_order_with_its_figures() {
        let entry = |id: &str, state, share: f64| LedgerEntry {
            id: id.into(),
            cause: "hot_cpu".into(),
            resource: Resource::Cpu {
                cpus: vec![0],
                far: false,
            },
            capacity: Some(Quantity::new(100.0, Unit::Percent, "CPU 0")),
            used: Some(Quantity::new(share * 100.0, Unit::Percent, "busy")),
            share: Some(share),
            errors: None,
            state,
            confidence: 0.8,
            evidence: Vec::new(),
            explains: Vec::new(),
            explained_by: None,
            gain: Some(Gain {
                factor: Some(2.5),
                until: Some("cpu:1".into()),
                text: "x".into(),
            }),
            why: format!("because {id}"),
        };
        let l = Ledger {
            entries: vec![
                entry("cpu:0", EntryState::Binds, 0.99),
                entry("cpu:1", EntryState::Headroom, 0.4),
            ],
            delivered: None,
            verdict: "cpu:0 is the verdict".into(),
        };
        let text = ledger_table("run", &l, 200);
        assert!(
            text.starts_with("ledger of run: cpu:0 is the verdict"),
            "{text}"
        );
        let v = text.find("VERDICT").unwrap();
        let h = text.find("headroom").unwrap();
        assert!(v < h, "{text}");
        assert!(text.contains("99 %: 99 % of 100 % (CPU 0)"), "{text}");
        assert!(text.contains("2.50×"), "{text}");
    }
}
