//! The ledger: every suspect sized against the capacity it uses, and one ranking over them.
//!
//! Rules do not decide precedence. Each contributes [`Entry`]s: a resource, its capacity and
//! what was used of it, the finding written from those figures, what relieving it would allow
//! on its own ([`Relief`]), and which other entries its saturation explains ([`Explains`]),
//! under a condition the rule measured. One function, [`rank`], reads them all:
//!
//! 1. **Explanations.** An entry whose saturation another claim explains is a symptom and
//!    follows that claim (socket drops behind the core that starved their reader; a hot core
//!    behind the thread that filled it). The claim must be sure enough ([`EXPLAIN_MIN`]); a
//!    symptom never explains its own cause back.
//! 2. **Gain.** For every claim left, the gain of relieving it: the delivered rate could rise
//!    by the least of its own relief, the headroom of every other sized resource that grows
//!    with the rate (`1 ÷ share`: a core at 50 % allows 2×), and the rate offered. The
//!    resource that binds next is named.
//! 3. **Order.** Ceilings and losses before a "where" (saturation) before costs (noted);
//!    within a class, the larger gain first (gains within [`GAIN_TIE`] are equal), then
//!    confidence. The first is the verdict. When no claim binds, the verdict is written from
//!    the sized resources instead (see `verdict.rs`), naming the closest to its limit.
//!
//! This is why a cause outranks its symptoms without a hand-written order: a full socket
//! buffer behind a starved reader gains nothing from relief (a bigger buffer only delays the
//! loss), while giving the reader its core gains until the next resource binds.

use netceil_model::{Cause, EntryState, Finding, Gain, LedgerEntry, Quantity, Resource, Unit};

use netceil_model::fmt;

/// A claim must be at least this sure of itself to explain another entry.
pub const EXPLAIN_MIN: f64 = 0.4;

/// Gains closer than this (as factors: 1.10 vs 1.14) are a tie, decided by confidence.
pub const GAIN_TIE: f64 = 0.08;

/// From this share of its capacity a resource is taken as full.
pub const SATURATED_SHARE: f64 = 0.85;

/// From this share a resource is said to be near its limit (in the no-ceiling verdict).
pub const NEAR_SHARE: f64 = 0.7;

/// What an entry claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    /// A saturated resource that can set the ceiling.
    Ceiling,
    /// Errors at a resource (drops, retransmits): a ceiling only when nothing explains them.
    Loss,
    /// Where the run saturated, not why: follows a cause when one explains it, and otherwise
    /// stands as the loss it is.
    Where,
    /// A finding that is not a ceiling on its own: a cost, arithmetic, something too small to
    /// limit anything. It is the verdict only when nothing else is claimed.
    Noted,
    /// A resource sized to rule it out: never a finding, only in the ledger and the verdict's
    /// words.
    Context,
}

/// What relieving a resource would allow by itself, before any other resource binds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Relief {
    /// Relieving it lifts its own limit entirely (more cores, a higher shaper rate): the gain
    /// is whatever binds next.
    Unbounded,
    /// Relieving it gains at most this factor (1.3 = 30 % more delivered).
    Factor(f64),
    /// Relieving it alone gains nothing (a buffer in front of a reader that is slower on
    /// average than the arrivals).
    Nothing,
}

impl Relief {
    fn factor(self) -> f64 {
        match self {
            Relief::Unbounded => f64::INFINITY,
            Relief::Factor(f) => f.max(1.0),
            Relief::Nothing => 1.0,
        }
    }
}

/// Which other entries a claim explains: entries of `cause`, restricted to those on `cpus`
/// when given (an entry on no particular CPU matches any).
#[derive(Debug, Clone, PartialEq)]
pub struct Explains {
    pub cause: Cause,
    pub cpus: Option<Vec<u32>>,
}

impl Explains {
    pub fn cause(cause: impl Into<Cause>) -> Explains {
        Explains {
            cause: cause.into(),
            cpus: None,
        }
    }

    pub fn on(cause: impl Into<Cause>, cpus: &[u32]) -> Explains {
        Explains {
            cause: cause.into(),
            cpus: Some(cpus.to_vec()),
        }
    }
}

/// One entry as the rules build it.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: String,
    pub class: Class,
    pub cause: Cause,
    pub resource: Resource,
    pub capacity: Option<Quantity>,
    pub used: Option<Quantity>,
    pub share: Option<f64>,
    pub errors: Option<Quantity>,
    /// True when `share` grows with the delivered rate, so `1 ÷ share` is the headroom it
    /// leaves (a core's busy time, a link's bits); false for shares that do not (a window's
    /// limited time, a queue's drop share).
    pub scales: bool,
    pub relief: Relief,
    /// Relieving it delivers what was already offered and lost there (drops at a queue, a
    /// policer's discards): nothing upstream has to do more, so no other resource's headroom
    /// caps its gain; its relief alone is the gain.
    pub recovers_offered: bool,
    pub explains: Vec<Explains>,
    /// The finding written from this entry; for [`Class::Context`] only its evidence is used.
    pub finding: Finding,
    /// Why an experiment (`--confirm`) says this is not the ceiling: relieving it moved
    /// nothing. A refuted entry binds nothing and explains nothing.
    pub refuted: Option<String>,
}

impl Entry {
    /// A claim of `class`, written as `finding` (whose cause it takes).
    pub fn claim(class: Class, resource: Resource, finding: Finding) -> Entry {
        Entry {
            id: resource_id(&resource),
            class,
            cause: finding.cause.clone(),
            resource,
            capacity: None,
            used: None,
            share: None,
            errors: None,
            scales: false,
            relief: Relief::Unbounded,
            recovers_offered: class == Class::Loss,
            explains: Vec::new(),
            finding,
            refuted: None,
        }
    }

    /// A resource sized only to rule it in or out.
    pub fn context(resource: Resource, cause: impl Into<Cause>, text: impl Into<String>) -> Entry {
        let finding = crate::ctx::finding(cause, text, 0.0);
        let mut e = Entry::claim(Class::Context, resource, finding);
        e.scales = true;
        e
    }

    /// Capacity and use in the same unit; the share is their ratio.
    #[must_use]
    pub fn sized(mut self, capacity: Quantity, used: Quantity) -> Entry {
        if capacity.value > 0.0 && used.value.is_finite() {
            self.share = Some(used.value / capacity.value);
        }
        self.capacity = Some(capacity);
        self.used = Some(used);
        self
    }

    /// Marks the share as growing with the delivered rate (see [`Entry::scales`]).
    #[must_use]
    pub fn scaling(mut self) -> Entry {
        self.scales = true;
        self
    }

    #[must_use]
    pub fn errors(mut self, errors: Quantity) -> Entry {
        self.errors = Some(errors);
        self
    }

    #[must_use]
    pub fn relief(mut self, relief: Relief) -> Entry {
        self.relief = relief;
        self
    }

    /// What was offered and dropped here comes back on relief: the gain is `factor`
    /// (offered ÷ delivered), uncapped by other resources (see [`Entry::recovers_offered`]).
    #[must_use]
    pub fn recovering(mut self, factor: f64) -> Entry {
        self.recovers_offered = true;
        self.relief = Relief::Factor(factor);
        self
    }

    #[must_use]
    pub fn explains(mut self, e: Explains) -> Entry {
        self.explains.push(e);
        self
    }

    #[must_use]
    pub fn explains_all(mut self, causes: &[Cause]) -> Entry {
        self.explains
            .extend(causes.iter().map(|c| Explains::cause(c.clone())));
        self
    }

    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Entry {
        self.id = id.into();
        self
    }

    pub fn confidence(&self) -> f64 {
        self.finding.confidence
    }

    /// The CPUs this entry is about, if it is about particular ones.
    fn cpus(&self) -> Option<Vec<u32>> {
        match &self.resource {
            Resource::Cpu { cpus, far: false } => Some(cpus.clone()),
            Resource::Thread { cpu: Some(c), .. } => Some(vec![*c]),
            _ => None,
        }
    }

    fn is_claim(&self) -> bool {
        self.class != Class::Context
    }
}

/// Marks the claims whose cause an experiment refuted (`--confirm` found that relieving it
/// moved nothing), with the experiment's sentence in their finding's evidence.
pub fn apply_confirmations(entries: &mut [Entry], confirmations: &[netceil_model::Confirmation]) {
    for c in confirmations
        .iter()
        .filter(|c| c.outcome == netceil_model::ConfirmOutcome::Refuted)
    {
        for e in entries
            .iter_mut()
            .filter(|e| e.is_claim() && e.cause == c.cause)
        {
            e.refuted = Some(c.summary.clone());
        }
    }
    for c in confirmations {
        for e in entries.iter_mut().filter(|e| e.cause == c.cause) {
            e.finding.evidence.push(netceil_model::Evidence {
                metric: "confirm".into(),
                window_s: None,
                value: None,
                unit: None,
                text: c.summary.clone(),
            });
        }
    }
}

/// The id of a resource: `cpu:0,1`, `thread:4211`, `queue:socket`…
pub fn resource_id(r: &Resource) -> String {
    let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    // Readable ids: names as the data spells them, with blanks joined.
    let slug = |s: &str| s.split_whitespace().collect::<Vec<_>>().join("_");
    match r {
        Resource::Cpu { cpus, far } => format!(
            "{}cpu:{}",
            if *far { "far:" } else { "" },
            if cpus.is_empty() {
                "all".to_string()
            } else {
                list(cpus)
            }
        ),
        Resource::Thread { tid, comm, .. } => match tid {
            Some(t) => format!("thread:{t}"),
            None => format!("thread:{}", slug(comm)),
        },
        Resource::Queue { name, far } => {
            format!("{}queue:{}", if *far { "far:" } else { "" }, slug(name))
        }
        Resource::Lock { name, .. } => format!("lock:{}", slug(name)),
        Resource::Shaper { name } => format!("shaper:{}", slug(name)),
        Resource::Link { name } => format!("link:{}", slug(name)),
        Resource::TcpFlow { limit } => format!("tcp:{}", slug(limit)),
        Resource::Scheduler { name } => format!("scheduler:{}", slug(name)),
        Resource::Disk => "disk".into(),
        Resource::Generator => "generator".into(),
        Resource::RoundTrip => "round_trip".into(),
        Resource::Events => "events".into(),
        Resource::Path => "path".into(),
        Resource::Data => "data".into(),
    }
}

/// A share in words: `97 % of one core`.
pub fn share_words(e: &Entry) -> Option<String> {
    let share = e.share?;
    let cap = e.capacity.as_ref()?;
    Some(format!(
        "{} of {}",
        fmt::value(share * 100.0, Unit::Percent),
        cap.how
    ))
}

/// The ranking's answer: entries in order, each with its state, and the sentence that says
/// how the verdict follows.
#[derive(Debug, Clone)]
pub struct Ranked {
    pub entries: Vec<Entry>,
    pub states: Vec<EntryState>,
    pub explained_by: Vec<Option<usize>>,
    pub gains: Vec<Option<Gain>>,
    pub whys: Vec<String>,
    /// True when the first entry binds (is a verdict); false when nothing claimed binds.
    pub binds: bool,
}

/// Whether `cause` explains `effect` (see the module header).
fn explains(cause: &Entry, effect: &Entry) -> bool {
    if !cause.is_claim() || cause.id == effect.id || cause.confidence() < EXPLAIN_MIN {
        return false;
    }
    cause.explains.iter().any(|x| {
        x.cause == effect.cause
            && match (&x.cpus, effect.cpus()) {
                // An entry on no listed CPU is on all of them.
                (Some(want), Some(on)) => on.is_empty() || on.iter().any(|c| want.contains(c)),
                _ => true,
            }
    })
}

/// For each entry, the claim that explains it (the most confident one, never one it explains
/// itself).
fn explanations(entries: &[Entry]) -> Vec<Option<usize>> {
    let mut by: Vec<Option<usize>> = vec![None; entries.len()];
    for (j, effect) in entries.iter().enumerate() {
        if !effect.is_claim() {
            continue;
        }
        by[j] = entries
            .iter()
            .enumerate()
            .filter(|(i, c)| *i != j && explains(c, effect) && !explains(effect, c))
            .max_by(|a, b| a.1.confidence().total_cmp(&b.1.confidence()))
            .map(|(i, _)| i);
    }
    // An explainer that is itself explained hands its symptoms up to its own cause, so that
    // chains end at one root; bounded, since the relation has no cycles by construction.
    for _ in 0..entries.len() {
        let mut changed = false;
        for j in 0..entries.len() {
            if let Some(i) = by[j] {
                if let Some(k) = by[i] {
                    if k != j {
                        by[j] = Some(k);
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    by
}

/// The gain of relieving entry `i`, against the headroom of the others (`offered` caps it:
/// the offered rate over the delivered one, for a paced run).
fn gain(entries: &[Entry], by: &[Option<usize>], i: usize, offered: Option<f64>) -> Gain {
    let me = &entries[i];
    // Drops are packets already sent: recovering them delivers more without anyone sending
    // more, so nothing upstream caps it; the relief itself (the share recovered) is the gain.
    if me.recovers_offered {
        let f = me.relief.factor();
        return Gain {
            factor: f.is_finite().then_some(f),
            until: None,
            text: match me.relief {
                Relief::Nothing => "relieving it alone gains nothing: what drains it is slower than what arrives, on average".into(),
                Relief::Factor(f) => format!(
                    "delivering what it dropped would raise the delivered rate about {}",
                    fmt::times(f.max(1.0))
                ),
                Relief::Unbounded => "the delivered rate would rise until a resource not measured here binds".into(),
            },
        };
    }
    let mut best = me.relief.factor();
    let mut until: Option<usize> = None;
    for (j, other) in entries.iter().enumerate() {
        if j == i || by[j] == Some(i) || !other.scales || other.id == me.id {
            continue;
        }
        // The same CPUs as a CPU claim: relieving the claim is relieving them.
        if matches!(me.resource, Resource::Cpu { .. })
            && me.cpus().is_some()
            && me.cpus() == other.cpus()
        {
            continue;
        }
        let Some(share) = other.share.filter(|s| *s > 0.0) else {
            continue;
        };
        let headroom = (1.0 / share).max(1.0);
        if headroom < best {
            best = headroom;
            until = Some(j);
        }
    }
    let mut capped_by_offer = false;
    if let Some(o) = offered.filter(|o| o.is_finite() && *o >= 1.0) {
        if o < best {
            best = o;
            until = None;
            capped_by_offer = true;
        }
    }
    let text = match (best.is_finite(), until) {
        (false, _) => match me.relief {
            Relief::Nothing => "relieving it alone gains nothing".into(),
            _ => "the delivered rate would rise until a resource not measured here binds".into(),
        },
        (true, Some(j)) if best <= 1.0 + 1e-9 => format!(
            "relieving it alone gains nothing while {} is as full",
            entries[j].id
        ),
        (true, Some(j)) => format!(
            "the delivered rate could rise about {} until {} binds next ({})",
            fmt::times(best),
            entries[j].id,
            share_words(&entries[j]).unwrap_or_else(|| "sized".into())
        ),
        (true, None) if capped_by_offer => format!(
            "the delivered rate could rise about {} to the rate offered",
            fmt::times(best)
        ),
        (true, None) if best <= 1.0 + 1e-9 => "relieving it alone gains nothing".into(),
        (true, None) => format!("relieving it could gain about {}", fmt::times(best)),
    };
    Gain {
        factor: best.is_finite().then_some(best),
        until: until.map(|j| entries[j].id.clone()),
        text,
    }
}

/// Compares two roots: class, then gain (a tie within [`GAIN_TIE`]), then confidence.
fn better(a: (&Entry, &Gain), b: (&Entry, &Gain)) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let class = |e: &Entry| match e.class {
        // Where loss began competes as what it is, a loss, when nothing explains it.
        Class::Ceiling | Class::Loss | Class::Where => 0,
        Class::Noted => 2,
        Class::Context => 3,
    };
    match class(a.0).cmp(&class(b.0)) {
        Ordering::Equal => {}
        o => return o,
    }
    // An unknown gain (nothing else measured bounds it) counts as large as the largest known.
    let ga = a.1.factor.unwrap_or(f64::INFINITY);
    let gb = b.1.factor.unwrap_or(f64::INFINITY);
    let tie = (ga.is_infinite() && gb.is_infinite())
        || (ga.is_finite() && gb.is_finite() && (ga - gb).abs() <= GAIN_TIE)
        || (ga.is_infinite() != gb.is_infinite() && ga.min(gb) > 1.5);
    if !tie {
        return gb.total_cmp(&ga);
    }
    b.0.confidence().total_cmp(&a.0.confidence())
}

/// Ranks the entries (see the module header). `offered` is the offered rate over the
/// delivered one when the run was paced (the gain can reach no further).
pub fn rank(mut entries: Vec<Entry>, offered: Option<f64>) -> Ranked {
    for e in entries.iter_mut().filter(|e| e.refuted.is_some()) {
        e.explains.clear();
    }
    let by = explanations(&entries);
    let gains: Vec<Option<Gain>> = (0..entries.len())
        .map(|i| {
            (entries[i].is_claim() && by[i].is_none()).then(|| gain(&entries, &by, i, offered))
        })
        .collect();
    let mut roots: Vec<usize> = (0..entries.len())
        .filter(|&i| entries[i].is_claim() && by[i].is_none() && entries[i].refuted.is_none())
        .collect();
    roots.sort_by(|&a, &b| {
        better(
            (&entries[a], gains[a].as_ref().expect("roots have gains")),
            (&entries[b], gains[b].as_ref().expect("roots have gains")),
        )
    });
    // Each root, then what it explains (most confident first); then the context.
    let mut order: Vec<usize> = Vec::new();
    for &r in &roots {
        order.push(r);
        let mut followers: Vec<usize> = (0..entries.len()).filter(|&j| by[j] == Some(r)).collect();
        followers.sort_by(|&a, &b| entries[b].confidence().total_cmp(&entries[a].confidence()));
        order.extend(followers);
    }
    // Claims an experiment refuted: after every claim that stands, before the context.
    order.extend(
        (0..entries.len())
            .filter(|&i| entries[i].is_claim() && by[i].is_none() && entries[i].refuted.is_some()),
    );
    let mut context: Vec<usize> = (0..entries.len())
        .filter(|&i| !entries[i].is_claim())
        .collect();
    context.sort_by(|&a, &b| {
        let s = |i: usize| entries[i].share.unwrap_or(0.0);
        s(b).total_cmp(&s(a))
    });
    order.extend(context);

    let binds = roots.first().is_some_and(|&r| {
        matches!(
            entries[r].class,
            Class::Ceiling | Class::Loss | Class::Where
        )
    });
    let verdict = roots.first().copied().filter(|_| binds);
    let index_of: Vec<usize> = {
        let mut v = vec![0; entries.len()];
        for (pos, &i) in order.iter().enumerate() {
            v[i] = pos;
        }
        v
    };
    let mut states = Vec::new();
    let mut whys = Vec::new();
    let mut out_by = Vec::new();
    let mut out_gains = Vec::new();
    for &i in &order {
        let e = &entries[i];
        let (state, why) = state_of(e, i, &by, verdict, gains[i].as_ref(), &entries);
        states.push(state);
        whys.push(why);
        out_by.push(by[i].map(|k| index_of[k]));
        out_gains.push(gains[i].clone());
    }
    let mut ordered: Vec<Option<Entry>> = entries.into_iter().map(Some).collect();
    let entries: Vec<Entry> = order
        .iter()
        .map(|&i| ordered[i].take().expect("each entry once"))
        .collect();
    Ranked {
        entries,
        states,
        explained_by: out_by,
        gains: out_gains,
        whys,
        binds,
    }
}

fn state_of(
    e: &Entry,
    i: usize,
    by: &[Option<usize>],
    verdict: Option<usize>,
    gain: Option<&Gain>,
    entries: &[Entry],
) -> (EntryState, String) {
    if let Some(why) = &e.refuted {
        return (EntryState::Noted, format!("demoted by experiment: {why}"));
    }
    if let Some(k) = by[i] {
        return (
            EntryState::Symptom,
            format!(
                "follows {}: its saturation explains this one",
                entries[k].id
            ),
        );
    }
    if verdict == Some(i) {
        let g = gain.map(|g| g.text.clone()).unwrap_or_default();
        return (
            EntryState::Binds,
            format!("saturated and explained by nothing else; {g}"),
        );
    }
    match e.class {
        Class::Context => {
            let share = e.share.unwrap_or(0.0);
            if share >= SATURATED_SHARE {
                (
                    EntryState::Saturated,
                    "full, but no rule claimed it as a ceiling".into(),
                )
            } else if share >= NEAR_SHARE {
                (
                    EntryState::NearLimit,
                    format!(
                        "close to its limit (a resource is taken as full from {})",
                        fmt::value(SATURATED_SHARE * 100.0, Unit::Percent)
                    ),
                )
            } else {
                (EntryState::Headroom, "had room: ruled out".into())
            }
        }
        Class::Noted => (EntryState::Noted, "noted: not a ceiling on its own".into()),
        _ => {
            let g = gain.map(|g| g.text.clone()).unwrap_or_default();
            let v = verdict.map(|v| entries[v].id.clone()).unwrap_or_default();
            (
                EntryState::Saturated,
                format!("saturated too, but relieving it gains less than relieving {v}: {g}"),
            )
        }
    }
}

/// The ranked entries as the model's ledger.
pub fn to_model(r: &Ranked, delivered: Option<Quantity>, verdict: String) -> netceil_model::Ledger {
    let entries = r
        .entries
        .iter()
        .enumerate()
        .map(|(pos, e)| LedgerEntry {
            id: e.id.clone(),
            cause: e.cause.clone(),
            resource: e.resource.clone(),
            capacity: e.capacity.clone(),
            used: e.used.clone(),
            share: e.share,
            errors: e.errors.clone(),
            state: r.states[pos],
            confidence: e.finding.confidence,
            evidence: e.finding.evidence.clone(),
            explains: r
                .explained_by
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == Some(pos))
                .map(|(j, _)| r.entries[j].id.clone())
                .collect(),
            explained_by: r.explained_by[pos].map(|k| r.entries[k].id.clone()),
            gain: r.gains[pos].clone(),
            why: r.whys[pos].clone(),
        })
        .collect();
    netceil_model::Ledger {
        entries,
        delivered,
        verdict,
    }
}

/// A quantity in % of `what`.
pub fn pct(value: f64, how: impl Into<String>) -> Quantity {
    Quantity::new(value, Unit::Percent, how)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cause;
    use crate::ctx::finding;

    fn cpu(c: u32, share: f64) -> Entry {
        Entry::context(
            Resource::Cpu {
                cpus: vec![c],
                far: false,
            },
            cause::HOT_CPU,
            format!("CPU {c}"),
        )
        .sized(pct(100.0, "one core"), pct(share * 100.0, "busy"))
    }

    fn claim(class: Class, cause: impl Into<Cause>, resource: Resource, conf: f64) -> Entry {
        let cause: Cause = cause.into();
        Entry::claim(
            class,
            resource,
            finding(cause.clone(), format!("{cause}."), conf),
        )
    }

    /// A full core that starved the socket's reader, and that socket's drops.
    fn starved_reader() -> (Entry, Entry) {
        let core = claim(
            Class::Ceiling,
            cause::HOT_CPU,
            Resource::Cpu {
                cpus: vec![0],
                far: false,
            },
            0.7,
        )
        .sized(pct(100.0, "one core"), pct(99.0, "busy"))
        .scaling()
        .explains(Explains::cause(cause::BUFFER_DROPS));
        let drops = claim(
            Class::Loss,
            cause::BUFFER_DROPS,
            Resource::Queue {
                name: "socket".into(),
                far: false,
            },
            0.95,
        )
        .relief(Relief::Nothing);
        (core, drops)
    }

    #[test]
    fn a_starved_readers_drops_follow_the_core_that_starved_it() {
        let (core, drops) = starved_reader();
        let r = rank(vec![drops, core, cpu(1, 0.4)], None);
        assert!(r.binds);
        assert_eq!(r.entries[0].cause, cause::HOT_CPU);
        assert_eq!(r.states[0], EntryState::Binds);
        assert_eq!(r.entries[1].cause, cause::BUFFER_DROPS);
        assert_eq!(r.states[1], EntryState::Symptom);
        // Relieving the core: CPU 1 at 40 % allows 2.5×.
        let g = r.gains[0].as_ref().unwrap();
        assert!((g.factor.unwrap() - 2.5).abs() < 1e-9, "{g:?}");
        assert_eq!(g.until.as_deref(), Some("cpu:1"));
    }

    #[test]
    fn a_core_an_experiment_refuted_binds_nothing_and_explains_nothing() {
        // An experiment found that spreading the work moved nothing: the core does not bind,
        // explains nothing, and the drops stand as the verdict.
        let (mut core, drops) = starved_reader();
        core.refuted = Some("the flows over 2 threads moved delivered from 100 to 101".into());
        let r = rank(vec![drops, core, cpu(1, 0.4)], None);
        assert!(r.binds);
        assert_eq!(r.entries[0].cause, cause::BUFFER_DROPS);
        assert_eq!(r.states[0], EntryState::Binds);
        assert_eq!(r.entries[1].cause, cause::HOT_CPU);
        assert_eq!(r.states[1], EntryState::Noted);
        assert!(r.whys[1].contains("demoted by experiment"), "{}", r.whys[1]);
    }

    #[test]
    fn the_more_utilized_of_two_saturated_resources_binds() {
        let thread = |tid: u32, share: f64, cause: Cause| {
            claim(
                Class::Ceiling,
                cause,
                Resource::Thread {
                    pid: None,
                    tid: Some(tid),
                    comm: format!("t{tid}"),
                    cpu: Some(tid),
                },
                0.8,
            )
            .sized(pct(100.0, "one core"), pct(share * 100.0, "on CPU"))
            .scaling()
        };
        let r = rank(
            vec![
                thread(1, 0.88, cause::RECEIVER_SATURATED),
                thread(0, 1.0, cause::SENDER_SATURATED),
            ],
            None,
        );
        assert_eq!(r.entries[0].cause, cause::SENDER_SATURATED);
        assert_eq!(r.states[1], EntryState::Saturated);
        assert_eq!(r.gains[1].as_ref().unwrap().factor, Some(1.0));
    }

    #[test]
    fn a_bursty_buffer_beats_a_sender_with_little_to_gain_and_loses_to_one_with_much() {
        let sender = |receiver_share: f64| {
            vec![
                claim(
                    Class::Ceiling,
                    cause::SENDER_SATURATED,
                    Resource::Thread {
                        pid: None,
                        tid: Some(1),
                        comm: "tx".into(),
                        cpu: Some(0),
                    },
                    0.8,
                )
                .sized(pct(100.0, "one core"), pct(99.0, "on CPU"))
                .scaling(),
                Entry::context(
                    Resource::Thread {
                        pid: None,
                        tid: Some(2),
                        comm: "rx".into(),
                        cpu: Some(1),
                    },
                    cause::RECEIVER_SATURATED,
                    "rx",
                )
                .sized(
                    pct(100.0, "one core"),
                    pct(receiver_share * 100.0, "on CPU"),
                ),
            ]
        };
        let drops = |share: f64| {
            claim(
                Class::Loss,
                cause::BUFFER_DROPS,
                Resource::Queue {
                    name: "socket".into(),
                    far: false,
                },
                0.9,
            )
            .relief(Relief::Factor(1.0 + share))
        };
        let mut a = sender(0.5);
        a.push(drops(0.03));
        assert_eq!(rank(a, None).entries[0].cause, cause::SENDER_SATURATED);
        let mut b = sender(0.97);
        b.push(drops(0.4));
        assert_eq!(rank(b, None).entries[0].cause, cause::BUFFER_DROPS);
    }

    #[test]
    fn nothing_claimed_does_not_bind_and_context_is_ordered_by_share() {
        let r = rank(vec![cpu(0, 0.3), cpu(1, 0.8)], None);
        assert!(!r.binds);
        assert_eq!(r.entries[0].id, "cpu:1");
        assert_eq!(r.states[0], EntryState::NearLimit);
        assert_eq!(r.states[1], EntryState::Headroom);
    }

    #[test]
    fn a_where_follows_any_cause_and_binds_alone() {
        let sat = || claim(Class::Where, cause::SATURATION, Resource::Path, 0.7);
        let shaper = claim(
            Class::Ceiling,
            cause::SHAPER,
            Resource::Shaper { name: "tbf".into() },
            0.6,
        )
        .explains(Explains::cause(cause::SATURATION));
        let r = rank(vec![sat(), shaper], None);
        assert_eq!(r.entries[0].cause, cause::SHAPER);
        assert_eq!(r.states[1], EntryState::Symptom);
        let r = rank(vec![sat()], None);
        assert!(r.binds);
        assert_eq!(r.entries[0].cause, cause::SATURATION);
    }

    #[test]
    fn an_unsure_claim_explains_nothing() {
        let weak = claim(
            Class::Ceiling,
            cause::CPU_CONTENTION,
            Resource::Cpu {
                cpus: vec![0, 1],
                far: false,
            },
            0.2,
        )
        .explains(Explains::cause(cause::BUFFER_DROPS));
        let drops = claim(
            Class::Loss,
            cause::BUFFER_DROPS,
            Resource::Queue {
                name: "socket".into(),
                far: false,
            },
            0.9,
        );
        let r = rank(vec![weak, drops], None);
        assert_eq!(r.entries[0].cause, cause::BUFFER_DROPS);
    }

    #[test]
    fn explanations_restricted_to_cpus_match_only_entries_there() {
        let hot1 = claim(
            Class::Ceiling,
            cause::HOT_CPU,
            Resource::Cpu {
                cpus: vec![1],
                far: false,
            },
            0.9,
        );
        let thread0 = claim(
            Class::Ceiling,
            cause::SENDER_SATURATED,
            Resource::Thread {
                pid: None,
                tid: Some(7),
                comm: "tx".into(),
                cpu: Some(0),
            },
            0.8,
        )
        .explains(Explains::on(cause::HOT_CPU, &[0]));
        let r = rank(vec![hot1, thread0], None);
        assert!(r.explained_by.iter().all(Option::is_none));
    }
}
