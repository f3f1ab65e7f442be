//! Knobs: settings a knob sweep changes, one value at a time, always restored.
//!
//! | key | what it writes |
//! |---|---|
//! | `net.core.netdev_budget`, `netdev_budget_usecs`, `netdev_max_backlog`, `busy_poll`, `busy_read`, `rmem_max`, `rmem_default`, `wmem_max`, `wmem_default`, `dev_weight` | the sysctl; in every lab namespace where the kernel keeps it per namespace (rmem/wmem), else the host's (journaled, restored) |
//! | `gro_flush_timeout`, `napi_defer_hard_irqs`, `threaded` | /sys/class/net/IFACE/KEY |
//! | `rps_cpus`, `xps_cpus` | every rx (RPS) or tx (XPS) queue's mask |
//! | `coalesce.PARAM` (e.g. `coalesce.rx-usecs`) | `ethtool -C IFACE PARAM VALUE` |
//!
//! Interface knobs apply to the receiving end (`b`) unless the key ends in `@a`, `@m` (every
//! interface of the middle namespace) or `@all`. Other sysctls and /sys attributes need
//! `--allow-any-knob`.

use crate::exec;
use crate::journal::{Change, Session};
use crate::topo::LabSpec;
use crate::{LabError, Result};

/// The sysctls a knob sweep may change without `--allow-any-knob`.
pub const SAFE_SYSCTLS: [&str; 10] = [
    "net.core.netdev_budget",
    "net.core.netdev_budget_usecs",
    "net.core.netdev_max_backlog",
    "net.core.busy_poll",
    "net.core.busy_read",
    "net.core.rmem_max",
    "net.core.rmem_default",
    "net.core.wmem_max",
    "net.core.wmem_default",
    "net.core.dev_weight",
];

/// The per-interface /sys attributes a knob sweep may change without `--allow-any-knob`.
pub const SAFE_IFACE: [&str; 3] = ["gro_flush_timeout", "napi_defer_hard_irqs", "threaded"];

/// Which end of the lab an interface knob applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    A,
    B,
    Middle,
    All,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Sysctl { key: String },
    Iface { attr: String, side: Side },
    Queues { attr: String, side: Side },
    Coalesce { param: String, side: Side },
}

/// One `--knob KEY=V1,V2,…`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Knob {
    /// As the user wrote it.
    pub key: String,
    pub target: Target,
    pub values: Vec<String>,
}

fn token_ok(t: &str, extra: &[char]) -> bool {
    !t.is_empty()
        && t.len() <= 64
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || extra.contains(&c))
}

/// Parses `KEY=V1,V2,…`, refusing keys outside the safe list unless `allow_any`.
pub fn parse(text: &str, allow_any: bool) -> Result<Knob> {
    let usage = |why: String| LabError::Usage(format!("--knob {text}: {why}"));
    let (key, values) = text
        .split_once('=')
        .ok_or_else(|| usage("expected KEY=V1,V2,… e.g. net.core.netdev_budget=300,600".into()))?;
    let key = key.trim();
    let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
    if let Some(v) = values.iter().find(|v| !token_ok(v, &['.', '-', '_', ':'])) {
        return Err(usage(format!(
            "value '{v}': expected a number, a hex mask or a word (letters, digits, . - _ :)"
        )));
    }
    let (name, side) = match key.rsplit_once('@') {
        Some((n, s)) => (
            n,
            match s {
                "a" => Side::A,
                "b" => Side::B,
                "m" => Side::Middle,
                "all" => Side::All,
                _ => return Err(usage(format!("'@{s}': expected @a, @b, @m or @all"))),
            },
        ),
        None => (key, Side::B),
    };
    let target = if name.starts_with("net.") || name.contains('.') && !name.starts_with("coalesce.")
    {
        if key.contains('@') {
            return Err(usage("a sysctl has no side; drop the '@…'".into()));
        }
        if !token_ok(name, &['.', '_', '-']) || name.contains("..") {
            return Err(usage(format!("'{name}' is not a sysctl name")));
        }
        if !allow_any && !SAFE_SYSCTLS.contains(&name) {
            return Err(usage(format!(
                "'{name}' is not on the known-safe list ({}); add --allow-any-knob to change it anyway",
                SAFE_SYSCTLS.join(", ")
            )));
        }
        Target::Sysctl { key: name.into() }
    } else if let Some(param) = name.strip_prefix("coalesce.") {
        if !token_ok(param, &['-']) {
            return Err(usage(format!("'{param}' is not an ethtool -C parameter")));
        }
        Target::Coalesce {
            param: param.into(),
            side,
        }
    } else if name == "rps_cpus" || name == "xps_cpus" {
        Target::Queues {
            attr: name.into(),
            side,
        }
    } else {
        if !token_ok(name, &['_']) {
            return Err(usage(format!("'{name}' is not a knob name")));
        }
        if !allow_any && !SAFE_IFACE.contains(&name) {
            return Err(usage(format!(
                "'{name}' is not a known knob (sysctls: {}; per interface: {}, rps_cpus, xps_cpus, coalesce.PARAM); add --allow-any-knob for another /sys/class/net attribute",
                SAFE_SYSCTLS.join(", "),
                SAFE_IFACE.join(", ")
            )));
        }
        Target::Iface {
            attr: name.into(),
            side,
        }
    };
    if values.is_empty() {
        return Err(usage("no values".into()));
    }
    Ok(Knob {
        key: key.into(),
        target,
        values,
    })
}

fn interfaces(spec: &LabSpec, side: Side) -> Vec<(String, String)> {
    let own = |ns: &str, i: &str| (ns.to_string(), i.to_string());
    let middle = || {
        spec.ns_m
            .iter()
            .flat_map(|m| spec.middle_ifaces.iter().map(move |i| own(m, i)))
            .collect::<Vec<_>>()
    };
    match side {
        Side::A => vec![own(&spec.ns_a, &spec.iface_a)],
        Side::B => vec![own(&spec.ns_b, &spec.iface_b)],
        Side::Middle => middle(),
        Side::All => {
            let mut v = vec![
                own(&spec.ns_a, &spec.iface_a),
                own(&spec.ns_b, &spec.iface_b),
            ];
            v.extend(middle());
            v
        }
    }
}

/// Sets one knob to one value over the lab, journaling every original in `session`; what it
/// wrote where, for the run's notes.
pub fn apply(
    session: &mut Session,
    spec: &LabSpec,
    knob: &Knob,
    value: &str,
) -> Result<Vec<String>> {
    let mut done = Vec::new();
    match &knob.target {
        Target::Sysctl { key } => {
            let path = format!("/proc/sys/{}", key.replace('.', "/"));
            // A sysctl the kernel keeps per namespace is visible inside one; a global one only
            // in the host's view.
            // Some are shown inside a namespace but read-only there (the value is the host's).
            let per_netns = exec::read_file(Some(&spec.ns_b), &path).is_ok()
                && exec::in_ns(&spec.ns_b, "test", &["-w", &path]).is_ok();
            if per_netns {
                for ns in spec.namespaces() {
                    session.write(Some(ns), &path, value)?;
                }
                done.push(format!(
                    "{key}={value} in each lab namespace (a per-namespace sysctl)"
                ));
            } else {
                if std::fs::metadata(&path).is_err() {
                    return Err(LabError::Unsupported(format!(
                        "{key}: no {path} on this kernel"
                    )));
                }
                session.write(None, &path, value)?;
                let now = exec::read_file(None, &path)?;
                done.push(if now == value {
                    format!("{key}={value} on the host (a global sysctl; restored afterwards)")
                } else {
                    format!(
                        "{key}={value} asked, the kernel kept {now} (host; restored afterwards)"
                    )
                });
            }
        }
        Target::Iface { attr, side } => {
            for (ns, iface) in interfaces(spec, *side) {
                let path = format!("/sys/class/net/{iface}/{attr}");
                if exec::read_file(Some(&ns), &path).is_err() {
                    done.push(format!("{iface} in {ns} has no {attr}"));
                    continue;
                }
                session.write(Some(&ns), &path, value).map_err(|e| {
                    LabError::Unsupported(format!("{attr}={value} on {iface} in {ns}: {e}"))
                })?;
                done.push(format!("{attr}={value} on {iface} in {ns}"));
            }
        }
        Target::Queues { attr, side } => {
            let dir = if attr == "rps_cpus" { "rx-" } else { "tx-" };
            for (ns, iface) in interfaces(spec, *side) {
                let queues = exec::in_ns(&ns, "ls", &[&format!("/sys/class/net/{iface}/queues")])?;
                for q in queues.split_whitespace().filter(|q| q.starts_with(dir)) {
                    let path = format!("/sys/class/net/{iface}/queues/{q}/{attr}");
                    session.write(Some(&ns), &path, value)?;
                    done.push(format!("{attr}={value} on {iface} {q} in {ns}"));
                }
            }
        }
        Target::Coalesce { param, side } => {
            for (ns, iface) in interfaces(spec, *side) {
                let shown = exec::in_ns(&ns, "ethtool", &["-c", &iface]).map_err(|e| {
                    LabError::Unsupported(format!(
                        "coalesce.{param} on {iface} in {ns}: the device does not support interrupt coalescing (ethtool -c: {e}). veth and macvlan have no interrupts to moderate; their moderation knobs are gro_flush_timeout and napi_defer_hard_irqs"
                    ))
                })?;
                let original = shown
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        (k.trim() == param).then(|| v.trim().to_string())
                    })
                    .ok_or_else(|| {
                        LabError::Unsupported(format!(
                            "coalesce.{param}: ethtool -c {iface} shows no '{param}'"
                        ))
                    })?;
                let change = Change::Coalesce {
                    netns: ns.clone(),
                    iface: iface.clone(),
                    param: param.clone(),
                    original,
                };
                session.change(change, || {
                    exec::in_ns(&ns, "ethtool", &["-C", &iface, param, value]).map(|_| ())
                })?;
                done.push(format!("ethtool -C {iface} {param} {value} in {ns}"));
            }
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_values_and_sides() {
        let k = parse("net.core.netdev_budget=300,600", false).unwrap();
        assert_eq!(
            k.target,
            Target::Sysctl {
                key: "net.core.netdev_budget".into()
            }
        );
        assert_eq!(k.values, ["300", "600"]);
        let k = parse("gro_flush_timeout@all=0,20000", false).unwrap();
        assert_eq!(
            k.target,
            Target::Iface {
                attr: "gro_flush_timeout".into(),
                side: Side::All
            }
        );
        let k = parse("rps_cpus=1,3", false).unwrap();
        assert!(matches!(k.target, Target::Queues { side: Side::B, .. }));
        let k = parse("coalesce.rx-usecs@a=0,64", false).unwrap();
        assert!(matches!(k.target, Target::Coalesce { side: Side::A, .. }));
    }

    #[test]
    fn unsafe_or_malformed_knobs_are_refused_with_the_fix() {
        let e = parse("net.ipv4.tcp_rmem=1", false).unwrap_err().to_string();
        assert!(e.contains("--allow-any-knob"), "{e}");
        assert!(parse("net.ipv4.tcp_congestion_control=cubic", true).is_ok());
        assert!(parse("tx_queue_len=10", false).is_err());
        assert!(parse("tx_queue_len=10", true).is_ok());
        for bad in [
            "net.core.netdev_budget",
            "net.core.netdev_budget=",
            "net.core.netdev_budget=1;reboot",
            "net.core..x=1",
            "net.core.netdev_budget@b=1",
            "gro_flush_timeout@z=1",
            "../../etc/passwd=1",
        ] {
            assert!(parse(bad, true).is_err(), "{bad}");
        }
    }
}
