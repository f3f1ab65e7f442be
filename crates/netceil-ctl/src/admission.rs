//! Who gets a handshake slot: the server's table of control connections that have not yet
//! proved the key.
//!
//! A stranger needs no key to open a TCP connection, so slots alone cannot be reserved for
//! keyed clients before they prove it. Two rules keep a flood from locking them out:
//! - one host (an IPv4 address, or an IPv6 /64, which one host commonly holds whole) holds at
//!   most [`Admission::max_per_host`] slots: its next connection displaces its own oldest;
//! - the newest connection always gets a slot: when the table is full it displaces the oldest
//!   connection of the host holding the most slots.
//!
//! So a keyed client's handshake, from a host holding fewer slots than the heaviest, is never
//! the one displaced: to push it out a flood needs as many hosts as there are slots. Granted
//! tests leave this table (their own limit is `max_tests`).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

/// Handshake slots one host may hold, by default.
pub const MAX_HANDSHAKES_PER_HOST: u32 = 32;

/// Where a connection comes from, as far as the bounds are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Host {
    V4(std::net::Ipv4Addr),
    /// The first 64 bits of an IPv6 address.
    V6Net([u8; 8]),
}

impl From<IpAddr> for Host {
    fn from(ip: IpAddr) -> Host {
        match ip {
            IpAddr::V4(a) => Host::V4(a),
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(v4) => Host::V4(v4),
                None => {
                    let o = a.octets();
                    Host::V6Net([o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7]])
                }
            },
        }
    }
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::V4(a) => write!(f, "{a}"),
            Host::V6Net(p) => {
                let mut o = [0u8; 16];
                o[..8].copy_from_slice(p);
                write!(f, "{}/64", std::net::Ipv6Addr::from(o))
            }
        }
    }
}

/// The table's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admission {
    /// Slots in all (`serve --max-clients`).
    pub max_open: usize,
    /// Slots one host may hold.
    pub max_per_host: usize,
}

impl Admission {
    /// The bounds for `max_open` slots: a host may hold [`MAX_HANDSHAKES_PER_HOST`] of them,
    /// or all when there are fewer; never less than one.
    pub fn new(max_open: u32) -> Admission {
        let max_open = (max_open as usize).max(1);
        Admission {
            max_open,
            max_per_host: (MAX_HANDSHAKES_PER_HOST as usize).min(max_open),
        }
    }
}

/// Why a connection lost its slot to a newer one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Displaced {
    /// Its host opened one more than it may hold.
    HostAtBound,
    /// Every slot was taken and its host held the most.
    TableFull,
    /// The server ran out of descriptors and its host held the most.
    OutOfDescriptors,
}

/// A connection that lost its slot: the caller closes it.
#[derive(Debug)]
pub struct Evicted<T> {
    pub host: Host,
    pub why: Displaced,
    pub value: T,
}

struct Entry<T> {
    host: Host,
    /// Admission order: smaller is older.
    seq: u64,
    value: T,
}

/// The handshake slots: a slab of connections, each with its host, indexed by slot (the
/// caller's poll token).
pub struct Slots<T> {
    bounds: Admission,
    entries: Vec<Option<Entry<T>>>,
    free: Vec<usize>,
    /// Each host's slots, oldest first.
    by_host: HashMap<Host, VecDeque<usize>>,
    open: usize,
    next_seq: u64,
    /// The most slots one host held at once, and the most held in all.
    peak_one_host: usize,
    peak_open: usize,
}

impl<T> Slots<T> {
    pub fn new(bounds: Admission) -> Slots<T> {
        Slots {
            bounds,
            entries: Vec::new(),
            free: Vec::new(),
            by_host: HashMap::new(),
            open: 0,
            next_seq: 0,
            peak_one_host: 0,
            peak_open: 0,
        }
    }

    pub fn bounds(&self) -> Admission {
        self.bounds
    }

    /// Connections held.
    pub fn open(&self) -> usize {
        self.open
    }

    /// Connections `host` holds.
    pub fn held_by(&self, host: Host) -> usize {
        self.by_host.get(&host).map_or(0, VecDeque::len)
    }

    /// The most slots one host held at once so far, and the most held in all.
    pub fn peaks(&self) -> (usize, usize) {
        (self.peak_one_host, self.peak_open)
    }

    /// Frees what a new connection from `host` needs: the oldest of its own when it is at its
    /// bound, else the oldest of the heaviest host when the table is full. Call before
    /// [`Slots::insert_with`].
    pub fn make_room(&mut self, host: Host) -> Option<Evicted<T>> {
        if self.held_by(host) >= self.bounds.max_per_host {
            return self.evict_oldest_of(host, Displaced::HostAtBound);
        }
        if self.open >= self.bounds.max_open {
            return self.evict_heaviest(Displaced::TableFull);
        }
        None
    }

    /// Frees one slot, the oldest of the host holding the most (a tie goes to the host whose
    /// oldest is oldest); `None` when the table is empty.
    pub fn evict_heaviest(&mut self, why: Displaced) -> Option<Evicted<T>> {
        let host = self
            .by_host
            .iter()
            .filter_map(|(h, slots)| {
                let oldest = self.seq_of(*slots.front()?)?;
                Some(((slots.len(), std::cmp::Reverse(oldest)), *h))
            })
            .max_by_key(|(rank, _)| *rank)?
            .1;
        self.evict_oldest_of(host, why)
    }

    fn seq_of(&self, slot: usize) -> Option<u64> {
        self.entries.get(slot)?.as_ref().map(|e| e.seq)
    }

    fn evict_oldest_of(&mut self, host: Host, why: Displaced) -> Option<Evicted<T>> {
        let slot = *self.by_host.get(&host)?.front()?;
        let (host, value) = self.remove(slot)?;
        Some(Evicted { host, why, value })
    }

    /// Puts a connection from `host` in a free slot, made by `make` from the slot's number;
    /// if `make` fails nothing is taken. Goes over the bounds if [`Slots::make_room`] was not
    /// called first.
    pub fn insert_with<E>(
        &mut self,
        host: Host,
        make: impl FnOnce(usize) -> Result<T, E>,
    ) -> Result<usize, E> {
        let slot = match self.free.last() {
            Some(&s) => s,
            None => self.entries.len(),
        };
        let value = make(slot)?;
        if self.free.last() == Some(&slot) {
            self.free.pop();
        } else {
            self.entries.push(None);
        }
        self.entries[slot] = Some(Entry {
            host,
            seq: self.next_seq,
            value,
        });
        self.next_seq += 1;
        let mine = self.by_host.entry(host).or_default();
        mine.push_back(slot);
        self.peak_one_host = self.peak_one_host.max(mine.len());
        self.open += 1;
        self.peak_open = self.peak_open.max(self.open);
        Ok(slot)
    }

    pub fn get_mut(&mut self, slot: usize) -> Option<&mut T> {
        self.entries.get_mut(slot)?.as_mut().map(|e| &mut e.value)
    }

    /// Takes a connection out of its slot (closed, timed out, or granted).
    pub fn remove(&mut self, slot: usize) -> Option<(Host, T)> {
        let e = self.entries.get_mut(slot)?.take()?;
        if let Some(mine) = self.by_host.get_mut(&e.host) {
            if let Some(i) = mine.iter().position(|&s| s == slot) {
                mine.remove(i);
            }
            if mine.is_empty() {
                self.by_host.remove(&e.host);
            }
        }
        self.free.push(slot);
        self.open -= 1;
        Some((e.host, e.value))
    }

    /// Every connection held, with its slot.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &T)> {
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_ref().map(|e| (i, &e.value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::net::Ipv4Addr;

    fn v4(n: u8) -> Host {
        Host::V4(Ipv4Addr::new(198, 18, 1, n))
    }

    fn admit(s: &mut Slots<u32>, h: Host, v: u32) -> (usize, Option<Evicted<u32>>) {
        let ev = s.make_room(h);
        let slot = s
            .insert_with(h, |_| Ok::<_, ()>(v))
            .expect("make never fails here");
        (slot, ev)
    }

    #[test]
    fn hosts_are_ipv4_addresses_or_ipv6_64s() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(Host::from(a), Host::from(b));
        assert_ne!(Host::from(a), Host::from(c));
        assert_eq!(Host::from(a).to_string(), "2001:db8:1:2::/64");
        let mapped: IpAddr = "::ffff:198.18.1.1".parse().unwrap();
        assert_eq!(Host::from(mapped), v4(1));
        assert_eq!(v4(1).to_string(), "198.18.1.1");
    }

    #[test]
    fn a_flooding_host_displaces_only_its_own_and_a_newcomer_always_gets_in() {
        let mut s = Slots::new(Admission {
            max_open: 8,
            max_per_host: 4,
        });
        for i in 0..4 {
            assert!(admit(&mut s, v4(1), i).1.is_none());
        }
        // The fifth from the same host displaces that host's oldest.
        let (_, ev) = admit(&mut s, v4(1), 4);
        let ev = ev.unwrap();
        assert_eq!(
            (ev.host, ev.why, ev.value),
            (v4(1), Displaced::HostAtBound, 0)
        );
        assert_eq!(s.held_by(v4(1)), 4);
        // Two hosts fill the table; host 3 then displaces the oldest of the heaviest.
        for i in 10..13 {
            admit(&mut s, v4(2), i);
        }
        let (_, ev) = admit(&mut s, v4(2), 13);
        assert!(ev.is_none());
        assert_eq!(s.open(), 8);
        let (_, ev) = admit(&mut s, v4(3), 20);
        let ev = ev.unwrap();
        // Both hold 4: the older of the two oldest (host 1's, value 1) goes.
        assert_eq!(
            (ev.host, ev.why, ev.value),
            (v4(1), Displaced::TableFull, 1)
        );
        // Host 3 holds one slot; the heaviest host is displaced again, never host 3.
        for i in 0..20 {
            let (_, ev) = admit(&mut s, v4(2), 100 + i);
            assert_ne!(ev.unwrap().host, v4(3));
        }
        assert_eq!(s.held_by(v4(3)), 1);
        assert_eq!(s.peaks(), (4, 8));
    }

    #[test]
    fn a_failed_make_takes_no_slot() {
        let mut s: Slots<u32> = Slots::new(Admission::new(4));
        assert!(s.insert_with(v4(1), |_| Err("no")).is_err());
        assert_eq!(s.open(), 0);
        let slot = s.insert_with(v4(1), |n| Ok::<_, ()>(n as u32)).unwrap();
        assert_eq!(s.get_mut(slot), Some(&mut (slot as u32)));
        assert_eq!(s.remove(slot), Some((v4(1), slot as u32)));
        assert_eq!(s.remove(slot), None);
        assert_eq!(s.held_by(v4(1)), 0);
        assert!(s.evict_heaviest(Displaced::OutOfDescriptors).is_none());
    }

    #[test]
    fn the_per_host_bound_is_never_over_the_table() {
        assert_eq!(Admission::new(1024).max_per_host, 32);
        assert_eq!(Admission::new(4).max_per_host, 4);
        assert_eq!(Admission::new(0).max_open, 1);
    }

    proptest! {
        /// Over any sequence of arrivals and closes: the bounds hold, the newest connection
        /// always gets a slot, and a host holding fewer slots than another is never the one
        /// displaced when the table is full.
        #[test]
        fn the_bounds_hold_and_the_lightest_host_is_never_displaced(
            ops in proptest::collection::vec((0u8..6, any::<bool>(), 0usize..64), 1..400),
            max_open in 1usize..20,
            per_host in 1usize..10,
        ) {
            let bounds = Admission { max_open, max_per_host: per_host.min(max_open) };
            let mut s: Slots<u32> = Slots::new(bounds);
            let mut held: Vec<usize> = Vec::new();
            let occupied = |s: &Slots<u32>| s.iter().map(|(slot, _)| slot).collect::<Vec<_>>();
            for (i, (host, close, pick)) in ops.into_iter().enumerate() {
                if close && !held.is_empty() {
                    let slot = held.swap_remove(pick % held.len());
                    prop_assert!(s.remove(slot).is_some());
                    continue;
                }
                let h = v4(host);
                let counts: HashMap<Host, usize> =
                    s.by_host.iter().map(|(h, v)| (*h, v.len())).collect();
                let heaviest = counts.values().copied().max().unwrap_or(0);
                let (slot, ev) = admit(&mut s, h, i as u32);
                if let Some(ev) = ev {
                    let was = counts[&ev.host];
                    match ev.why {
                        Displaced::HostAtBound => prop_assert_eq!(ev.host, h),
                        _ => prop_assert_eq!(was, heaviest),
                    }
                }
                held = occupied(&s);
                prop_assert!(s.open() <= bounds.max_open);
                prop_assert!(s.held_by(h) <= bounds.max_per_host);
                prop_assert_eq!(s.get_mut(slot).copied(), Some(i as u32));
                prop_assert_eq!(s.iter().count(), s.open());
            }
        }
    }
}
