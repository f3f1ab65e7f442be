//! The topologies: two end namespaces, `a` (the sender) and `b` (the receiver), joined
//! directly or through a middle namespace `m`.
//!
//! | topology | path from a to b |
//! |---|---|
//! | `direct` | one veth pair |
//! | `bridge` | veth into a Linux bridge in m, then veth out; bridge netfilter calls off |
//! | `routed` | veth into m, IPv4 forwarding, veth out (two subnets) |
//! | `bridge-nf` | as `bridge`, with bridge-nf-call-iptables on and an inet forward chain with a counter rule, so every bridged packet runs the IP netfilter hooks |
//! | `conntrack` | as `routed`, with a stateful nftables rule in m, so connection tracking is on the path |
//! | `macvlan` | two macvlan ports (bridge mode) on one parent in m: L2 switching without a bridge device or a second veth |
//!
//! Names carry a `netceil-` prefix (namespaces `netceil-NAME-a`, `-b`, `-m`); interfaces,
//! which live only inside those namespaces, are `nc-a`, `nc-b`, `nc-ma`, `nc-mb`, `nc-br`.
//! Addresses come from 198.18.0.0/15, the range RFC 2544 sets aside for benchmarks, and exist
//! only in the lab's namespaces. IPv6 is off inside the lab, so router solicitations and MLD
//! reports do not add to the counters.

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use crate::exec;
use crate::journal::{Change, Journal, Pending, Recovery, Session};
use crate::owner::{netns_exists, Status};
use crate::{LabError, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    Direct,
    Bridge,
    Routed,
    BridgeNf,
    Conntrack,
    Macvlan,
}

impl Topology {
    pub const ALL: [Topology; 6] = [
        Topology::Direct,
        Topology::Bridge,
        Topology::Routed,
        Topology::BridgeNf,
        Topology::Conntrack,
        Topology::Macvlan,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Topology::Direct => "direct",
            Topology::Bridge => "bridge",
            Topology::Routed => "routed",
            Topology::BridgeNf => "bridge-nf",
            Topology::Conntrack => "conntrack",
            Topology::Macvlan => "macvlan",
        }
    }

    pub fn parse(text: &str) -> Result<Topology> {
        Topology::ALL
            .into_iter()
            .find(|t| t.name() == text.trim())
            .ok_or_else(|| {
                LabError::Usage(format!(
                    "unknown topology '{}': expected one of {}",
                    text.trim(),
                    Topology::ALL.map(Topology::name).join(", ")
                ))
            })
    }

    /// What a packet crosses from a to b, in words.
    pub fn path(self) -> &'static str {
        match self {
            Topology::Direct => "veth",
            Topology::Bridge => "veth, bridge, veth",
            Topology::Routed => "veth, IPv4 forwarding, veth",
            Topology::BridgeNf => "veth, bridge with the IP netfilter hooks, veth",
            Topology::Conntrack => "veth, forwarding with connection tracking, veth",
            Topology::Macvlan => "macvlan bridge-mode switching",
        }
    }

    fn has_middle(self) -> bool {
        self != Topology::Direct
    }

    fn routed(self) -> bool {
        matches!(self, Topology::Routed | Topology::Conntrack)
    }
}

/// A lab as built: its namespaces, interfaces and addresses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabSpec {
    pub name: String,
    pub topology: Topology,
    pub mtu: u32,
    pub ns_a: String,
    pub ns_b: String,
    pub ns_m: Option<String>,
    pub iface_a: String,
    pub iface_b: String,
    pub addr_a: Ipv4Addr,
    pub addr_b: Ipv4Addr,
    /// The middle namespace's interfaces.
    pub middle_ifaces: Vec<String>,
}

/// The prefix of everything the lab names.
pub const PREFIX: &str = "netceil-";

/// The lab a namespace belongs to (`netceil-NAME-a` → `NAME`), if it is named as the lab
/// names its namespaces.
pub fn lab_of(netns: &str) -> Option<&str> {
    let (name, side) = netns.strip_prefix(PREFIX)?.rsplit_once('-')?;
    (matches!(side, "a" | "b" | "m") && check_name(name).is_ok()).then_some(name)
}

/// Lab names: short, lower-case, so that namespace names stay readable.
pub fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 24
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-');
    if ok {
        Ok(())
    } else {
        Err(LabError::Usage(format!(
            "lab name '{name}': use 1 to 24 of a-z, 0-9 and '-' (not first)"
        )))
    }
}

impl LabSpec {
    pub fn new(name: &str, topology: Topology, mtu: u32) -> Result<LabSpec> {
        check_name(name)?;
        if !(68..=65535).contains(&mtu) {
            return Err(LabError::Usage(format!(
                "--mtu {mtu}: veth takes 68 to 65535"
            )));
        }
        let ns = |side: &str| format!("{PREFIX}{name}-{side}");
        let routed = topology.routed();
        Ok(LabSpec {
            name: name.to_string(),
            topology,
            mtu,
            ns_a: ns("a"),
            ns_b: ns("b"),
            ns_m: topology.has_middle().then(|| ns("m")),
            iface_a: "nc-a".into(),
            iface_b: "nc-b".into(),
            addr_a: Ipv4Addr::new(198, 18, 0, 1),
            addr_b: if routed {
                Ipv4Addr::new(198, 19, 0, 1)
            } else {
                Ipv4Addr::new(198, 18, 0, 2)
            },
            middle_ifaces: match topology {
                Topology::Direct => vec![],
                Topology::Bridge | Topology::BridgeNf => {
                    vec!["nc-ma".into(), "nc-mb".into(), "nc-br".into()]
                }
                Topology::Routed | Topology::Conntrack => vec!["nc-ma".into(), "nc-mb".into()],
                Topology::Macvlan => vec!["nc-p0".into(), "nc-p1".into()],
            },
        })
    }

    /// Every namespace of the lab, `a`, `b`, then `m`.
    pub fn namespaces(&self) -> Vec<&str> {
        let mut v = vec![self.ns_a.as_str(), self.ns_b.as_str()];
        v.extend(self.ns_m.as_deref());
        v
    }

    /// Every (namespace, interface) pair of the lab.
    pub fn interfaces(&self) -> Vec<(&str, &str)> {
        let mut v = vec![
            (self.ns_a.as_str(), self.iface_a.as_str()),
            (self.ns_b.as_str(), self.iface_b.as_str()),
        ];
        if let Some(m) = &self.ns_m {
            v.extend(self.middle_ifaces.iter().map(|i| (m.as_str(), i.as_str())));
        }
        v
    }

    /// Whether every namespace of the lab exists.
    pub fn is_up(&self) -> bool {
        self.namespaces()
            .iter()
            .all(|ns| std::path::Path::new("/run/netns").join(ns).exists())
    }
}

fn ip(ns: &str, args: &[&str]) -> Result<()> {
    let mut all = vec!["-n", ns];
    all.extend_from_slice(args);
    exec::run("ip", &all).map(|_| ())
}

fn veth(a_ns: &str, a: &str, b_ns: &str, b: &str) -> Result<()> {
    exec::run(
        "ip",
        &[
            "link", "add", a, "netns", a_ns, "type", "veth", "peer", "name", b, "netns", b_ns,
        ],
    )
    .map(|_| ())
}

/// The stateless rule of `bridge-nf`: every forwarded packet is counted by an inet chain.
const NFT_COUNT: &str = "table inet netceil {
  chain forward {
    type filter hook forward priority filter; policy accept;
    counter
  }
}
";

/// The stateful rule of `conntrack`: new and established flows accepted by their state.
const NFT_CONNTRACK: &str = "table inet netceil {
  chain forward {
    type filter hook forward priority filter; policy accept;
    ct state established,related counter accept
    ct state new counter accept
    ct state invalid counter drop
  }
}
";

/// Builds the lab. Every namespace is journaled in `session` before it is made; everything
/// else lives inside them and goes when they are deleted. On an error, the caller drops the
/// session, which deletes what was made.
pub fn up(session: &mut Session, spec: &LabSpec) -> Result<()> {
    for ns in spec.namespaces() {
        if netns_exists(ns) {
            return Err(LabError::Usage(format!(
                "lab '{}' is already up (namespace {ns} exists; {}); `netceil lab down {}` first, or give another --name",
                spec.name,
                session.journal().registry().status(ns),
                spec.name
            )));
        }
    }
    for ns in spec.namespaces() {
        session.netns(ns)?;
        ip(ns, &["link", "set", "lo", "up"])?;
        // No IPv6 inside the lab: its background packets would add to the counters.
        exec::write_file(Some(ns), "/proc/sys/net/ipv6/conf/all/disable_ipv6", "1")?;
        exec::write_file(
            Some(ns),
            "/proc/sys/net/ipv6/conf/default/disable_ipv6",
            "1",
        )?;
    }
    let (a, b) = (spec.ns_a.as_str(), spec.ns_b.as_str());
    let mtu = spec.mtu.to_string();
    let m = spec.ns_m.as_deref();
    match (spec.topology, m) {
        (Topology::Direct, _) => veth(a, &spec.iface_a, b, &spec.iface_b)?,
        (Topology::Macvlan, Some(m)) => {
            // A parent for the ports: one end of a veth pair kept inside m.
            ip(
                m,
                &[
                    "link", "add", "nc-p0", "type", "veth", "peer", "name", "nc-p1",
                ],
            )?;
            for dev in ["nc-p0", "nc-p1"] {
                ip(m, &["link", "set", dev, "mtu", &mtu, "up"])?;
            }
            for (ns, dev) in [(a, &spec.iface_a), (b, &spec.iface_b)] {
                ip(
                    m,
                    &[
                        "link", "add", "link", "nc-p0", "name", dev, "type", "macvlan", "mode",
                        "bridge",
                    ],
                )?;
                ip(m, &["link", "set", dev, "netns", ns])?;
            }
        }
        (_, Some(m)) => {
            veth(a, &spec.iface_a, m, "nc-ma")?;
            veth(b, &spec.iface_b, m, "nc-mb")?;
            for dev in ["nc-ma", "nc-mb"] {
                ip(m, &["link", "set", dev, "mtu", &mtu, "up"])?;
            }
        }
        (_, None) => unreachable!("every topology but direct has a middle namespace"),
    }
    for (ns, dev, addr) in [
        (a, &spec.iface_a, spec.addr_a),
        (b, &spec.iface_b, spec.addr_b),
    ] {
        ip(ns, &["link", "set", dev, "mtu", &mtu, "up"])?;
        ip(ns, &["addr", "add", &format!("{addr}/24"), "dev", dev])?;
    }
    let Some(m) = m else { return Ok(()) };
    match spec.topology {
        Topology::Bridge | Topology::BridgeNf => {
            ip(
                m,
                &[
                    "link",
                    "add",
                    "nc-br",
                    "type",
                    "bridge",
                    "stp_state",
                    "0",
                    "forward_delay",
                    "0",
                ],
            )?;
            for dev in ["nc-ma", "nc-mb"] {
                ip(m, &["link", "set", dev, "master", "nc-br"])?;
            }
            ip(m, &["link", "set", "nc-br", "mtu", &mtu, "up"])?;
            let nf = spec.topology == Topology::BridgeNf;
            // Per namespace since Linux 5.3; on by default where br_netfilter is built in.
            let calls = "/proc/sys/net/bridge/bridge-nf-call-iptables";
            match exec::write_file(Some(m), calls, if nf { "1" } else { "0" }) {
                Ok(()) => {}
                Err(_) if !nf => {}
                Err(e) => {
                    return Err(LabError::Unsupported(format!(
                    "bridge-nf needs br_netfilter ({calls}), which this kernel does not offer: {e}"
                )))
                }
            }
            if nf {
                exec::run_with_input(
                    "ip",
                    &["netns", "exec", m, "nft", "-f", "-"],
                    Some(NFT_COUNT),
                )?;
            }
        }
        Topology::Routed | Topology::Conntrack => {
            ip(m, &["addr", "add", "198.18.0.254/24", "dev", "nc-ma"])?;
            ip(m, &["addr", "add", "198.19.0.254/24", "dev", "nc-mb"])?;
            exec::write_file(Some(m), "/proc/sys/net/ipv4/ip_forward", "1")?;
            ip(a, &["route", "add", "default", "via", "198.18.0.254"])?;
            ip(b, &["route", "add", "default", "via", "198.19.0.254"])?;
            if spec.topology == Topology::Conntrack {
                exec::run_with_input(
                    "ip",
                    &["netns", "exec", m, "nft", "-f", "-"],
                    Some(NFT_CONNTRACK),
                )
                .map_err(|e| {
                    LabError::Unsupported(format!(
                        "conntrack needs nftables with connection tracking: {e}"
                    ))
                })?;
            }
        }
        Topology::Direct | Topology::Macvlan => {}
    }
    Ok(())
}

/// `lab up`: builds the lab and leaves it up, journaled as persistent with its description.
pub fn up_persistent(journal: &crate::journal::Journal, spec: &LabSpec) -> Result<()> {
    let mut s = Session::persistent(journal.clone());
    up(&mut s, spec)?;
    s.change(Change::Lab { spec: spec.clone() }, || Ok(()))?;
    s.keep();
    Ok(())
}

/// The labs `lab up` left running, from the journal.
pub fn persistent_labs(journal: &crate::journal::Journal) -> Result<Vec<LabSpec>> {
    Ok(journal
        .pending()?
        .into_iter()
        .filter_map(|p| match p.change {
            Change::Lab { spec } => Some(spec),
            _ => None,
        })
        .collect())
}

/// Whether a journaled change is part of lab `name`.
fn belongs_to(p: &Pending, name: &str) -> bool {
    match &p.change {
        Change::Lab { spec } => spec.name == name,
        Change::Netns { name: ns } => lab_of(ns) == Some(name),
        _ => false,
    }
}

/// A lab on this machine that is not this store's to take down: another store's, or one a
/// netceil of this store that still runs is using.
#[derive(Debug, Clone, PartialEq)]
pub struct HostLab {
    pub name: String,
    pub namespaces: Vec<String>,
    /// Who owns it: the best-protected of its namespaces.
    pub status: Status,
    /// Its namespaces are in this store's journal.
    pub this_store: bool,
}

/// The labs on this machine that `lab down --all` of this store leaves alone or may only
/// remove as orphans: every lab namespace this journal does not hold, those it holds for a
/// process that still runs, and those a `lab up` killed half-way left. By lab name, with who
/// owns each.
pub fn others(journal: &Journal) -> Result<Vec<HostLab>> {
    let pending = journal.pending()?;
    let mut labs: Vec<HostLab> = Vec::new();
    for ns in exec::namespaces()?
        .into_iter()
        .filter(|n| n.starts_with(PREFIX))
    {
        let ours = pending
            .iter()
            .find(|p| matches!(&p.change, Change::Netns { name } if *name == ns));
        let kept = |ns: &str| {
            pending.iter().any(
                |p| matches!(&p.change, Change::Lab { spec } if spec.namespaces().contains(&ns)),
            )
        };
        let status = match ours {
            // This store's, kept by `lab up` or left by a killed run: `lab list` shows them
            // from the journal.
            Some(p) if !p.owner_alive && (!p.persistent || kept(&ns)) => continue,
            // Left by a `lab up` killed before the lab was up: nothing else shows it.
            Some(p) if !p.owner_alive => Status::Orphaned {
                owner: p.owner(),
                journal: journal.path().to_path_buf(),
                persistent: true,
            },
            Some(p) => Status::Running {
                owner: p.owner(),
                journal: journal.path().to_path_buf(),
            },
            None => journal.registry().status(&ns),
        };
        let name = lab_of(&ns)
            .unwrap_or_else(|| ns.strip_prefix(PREFIX).unwrap_or(&ns))
            .to_string();
        match labs.iter_mut().find(|l| l.name == name) {
            Some(l) => {
                if status.rank() > l.status.rank() {
                    l.status = status;
                }
                l.namespaces.push(ns);
                l.namespaces.sort();
                l.this_store |= ours.is_some();
            }
            None => labs.push(HostLab {
                name,
                namespaces: vec![ns],
                status,
                this_store: ours.is_some(),
            }),
        }
    }
    Ok(labs)
}

/// What `lab down` did, and what it left alone.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Teardown {
    pub recovery: Recovery,
    /// Labs that are not this store's and were left alone, with whose they are.
    pub left: Vec<HostLab>,
    /// A lab of someone else's that was removed (orphaned, or named with --force).
    pub removed: Option<HostLab>,
}

/// Removes a lab that is not (only) this store's: through its owner's journal when there is
/// one, so that journal records it and a dead owner's other changes (its knobs) are reverted
/// too; then whatever is left of it directly.
fn remove(journal: &Journal, lab: &HostLab, r: &mut Recovery) {
    if let Some(path) = lab.status.journal() {
        let dead = match &lab.status {
            Status::Orphaned {
                owner,
                persistent: false,
                ..
            } => Some(*owner),
            _ => None,
        };
        let theirs = journal.other(path);
        match theirs.recover(|p| belongs_to(p, &lab.name) || dead == Some(p.owner())) {
            Ok(x) => {
                r.reverted.extend(x.reverted);
                r.failed.extend(x.failed);
            }
            Err(e) => r.failed.push(e.to_string()),
        }
    }
    for ns in &lab.namespaces {
        if netns_exists(ns) {
            match exec::run("ip", &["netns", "del", ns]) {
                Ok(_) => r.reverted.push(format!("network namespace {ns}")),
                Err(e) => r.failed.push(format!("network namespace {ns}: {e}")),
            }
        }
        if let Err(e) = journal.registry().release(ns, None) {
            r.failed.push(e.to_string());
        }
    }
}

/// `lab down --all`: everything this store's journal holds whose owner is gone (the labs
/// `lab up` kept, and what a killed netceil left), and every other lab on the machine whose
/// owner is gone. Labs whose owner runs, labs another store keeps up and labs nothing says
/// the owner of are left alone and listed.
pub fn down_all(journal: &Journal) -> Result<Teardown> {
    let mut recovery = journal.recover(|p| !p.owner_alive)?;
    let mut left = Vec::new();
    for lab in others(journal)? {
        if lab.status.orphaned() {
            remove(journal, &lab, &mut recovery);
        } else {
            left.push(lab);
        }
    }
    recovery.reverted.extend(journal.registry().sweep());
    Ok(Teardown {
        recovery,
        left,
        removed: None,
    })
}

/// `lab down NAME`: reverts everything journaled for the lab (its namespaces and its entry).
/// A lab another process still uses, another store keeps up, or nothing says the owner of is
/// refused, saying whose it is, unless `force`.
pub fn down(journal: &Journal, name: &str, force: bool) -> Result<Teardown> {
    check_name(name)?;
    let refuse = |status: &Status| {
        LabError::Usage(format!(
            "lab '{name}' is not this command's to take down: {status}; `netceil lab down {name} --force` removes it anyway"
        ))
    };
    let mine: Vec<Pending> = journal
        .pending()?
        .into_iter()
        .filter(|p| belongs_to(p, name))
        .collect();
    let lab = others(journal)?.into_iter().find(|l| l.name == name);
    if !mine.is_empty() {
        // This store's: refused only while a process that still runs holds it.
        let live = lab.filter(|l| matches!(l.status, Status::Running { .. }));
        if let (Some(l), false) = (&live, force) {
            return Err(refuse(&l.status));
        }
        let recovery = journal.recover(|p| belongs_to(p, name))?;
        return Ok(Teardown {
            recovery,
            left: Vec::new(),
            removed: live,
        });
    }
    let Some(lab) = lab else {
        return Err(LabError::Usage(format!(
            "no lab '{name}' is up (`netceil lab list` shows them)"
        )));
    };
    if !lab.status.orphaned() && !force {
        return Err(refuse(&lab.status));
    }
    let mut recovery = Recovery::default();
    remove(journal, &lab, &mut recovery);
    Ok(Teardown {
        recovery,
        left: Vec::new(),
        removed: Some(lab),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_addresses() {
        let s = LabSpec::new("x1", Topology::Routed, 1500).unwrap();
        assert_eq!(
            s.namespaces(),
            ["netceil-x1-a", "netceil-x1-b", "netceil-x1-m"]
        );
        assert_eq!(s.addr_b, Ipv4Addr::new(198, 19, 0, 1));
        let d = LabSpec::new("x1", Topology::Direct, 9000).unwrap();
        assert_eq!(d.namespaces().len(), 2);
        assert_eq!(d.addr_b, Ipv4Addr::new(198, 18, 0, 2));
        assert!(LabSpec::new("Bad Name", Topology::Direct, 1500).is_err());
        assert!(LabSpec::new("ok", Topology::Direct, 70000).is_err());
        assert!(Topology::parse("bridge-nf").is_ok());
        assert_eq!(lab_of("netceil-x1-m"), Some("x1"));
        assert_eq!(lab_of("netceil-x-y-a"), Some("x-y"), "lab x-y, not lab x");
        assert_eq!(lab_of("netceil-x1-q"), None);
        assert_eq!(lab_of("other-x1-a"), None);
        let e = Topology::parse("vxlan").unwrap_err().to_string();
        assert!(e.contains("direct, bridge, routed"), "{e}");
        for t in Topology::ALL {
            let j = serde_json::to_string(&t).unwrap();
            assert_eq!(j, format!("\"{}\"", t.name()));
        }
    }
}
