//! The causes a finding can name: one closed list, each with its stable name, so that the
//! analyzer, the store, the reports and the metrics endpoint agree on what a cause is and on
//! whether it names a ceiling. A name this version does not know (a run stored by a newer
//! netceil) is kept as [`Cause::Other`], so every stored run still loads.

use std::fmt;

macro_rules! causes {
    ($( $(#[doc = $doc:literal])* $variant:ident = $name:literal, $ceiling:literal; )*) => {
        /// What bound the run, or why nothing did. Serialized as its stable name.
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Cause {
            $( $(#[doc = $doc])* $variant, )*
            /// A name this version does not know, kept as it was written.
            Other(String),
        }

        impl Cause {
            /// Every cause this version knows, in the order they are listed.
            pub const ALL: &[Cause] = &[ $( Cause::$variant ),* ];

            /// The stable name (`hot_cpu`).
            pub fn as_str(&self) -> &str {
                match self {
                    $( Cause::$variant => $name, )*
                    Cause::Other(name) => name,
                }
            }

            /// The cause of that name; an unknown name is [`Cause::Other`].
            pub fn from_name(name: &str) -> Cause {
                match name {
                    $( $name => Cause::$variant, )*
                    other => Cause::Other(other.to_string()),
                }
            }

            /// Whether a verdict with this cause names a ceiling: false for the verdicts
            /// about its absence (`no_load`, `no_ceiling`, `link_headroom`) and for the one
            /// that could not name it (`unnamed_ceiling`). An unknown cause is taken to
            /// name one.
            pub fn names_ceiling(&self) -> bool {
                match self {
                    $( Cause::$variant => $ceiling, )*
                    Cause::Other(_) => true,
                }
            }
        }
    };
}

causes! {
    /// Delivered fell short of offered within a run: loss began.
    Saturation = "saturation", true;
    /// Across the points of a sweep (or parts of a suite): the highest loss-free rate.
    Knee = "knee", true;
    /// One core saturated while others had room.
    HotCpu = "hot_cpu", true;
    /// All cores busy.
    CpuBound = "cpu_bound", true;
    /// Interrupt and context-switch rates plateaued while the CPU had headroom.
    InterruptBound = "interrupt_bound", true;
    /// A closed request/response loop whose rate is its requests in flight over its mean
    /// round trip: latency, not a resource, set the ceiling.
    LatencyBound = "latency_bound", true;
    /// A lock's wait time is a large share of wall time × CPUs.
    LockContention = "lock_contention", true;
    /// OS CPU % far above the work actually done (spinning schedulers).
    BusyWait = "busy_wait", true;
    /// A thread near 100 % CPU that never blocks: a polling loop.
    PollingThread = "polling_thread", true;
    /// Drops at a socket buffer, the backlog, the NAPI budget or the NIC ring.
    BufferDrops = "buffer_drops", true;
    /// Retransmissions and duplicate SACKs.
    TcpPath = "tcp_path", true;
    /// The link or bus carried all it can.
    LinkLimit = "link_limit", true;
    /// The link, bus and packet-rate ceilings, and how far below them the run stayed.
    LinkHeadroom = "link_headroom", false;
    /// The sender could not reach the requested rate.
    GeneratorLimited = "generator_limited", true;
    /// netceil's own sender spent its CPU spinning.
    GeneratorBusyWait = "generator_busy_wait", true;
    /// Timer interrupts or IPIs, not devices, made the interrupt rate on busy CPUs.
    SystemInterrupts = "system_interrupts", true;
    /// An unpaced run's sending thread saturated a core while the receiver kept up.
    SenderSaturated = "sender_saturated", true;
    /// An unpaced run's receiving thread saturated a core and could not keep up.
    ReceiverSaturated = "receiver_saturated", true;
    /// A thread of the observed workload saturated a core while making progress.
    ThreadSaturated = "thread_saturated", true;
    /// Processes outside the workload took the CPU the network work needed.
    CpuContention = "cpu_contention", true;
    /// The receive softirq ran out of budget with work left: since boot (time_squeeze), or live
    /// (NAPI polls that used their whole budget, from the napi probe).
    NapiBudget = "napi_budget", true;
    /// A CPU was full of network softirq work, timed exactly by the softirq probe.
    SoftirqBound = "softirq_bound", true;
    /// Since boot, receive work ran nearly all on one CPU.
    RxSkew = "rx_skew", true;
    /// A shaper or policer (a rate-limiting qdisc) held the traffic at its rate.
    Shaper = "shaper", true;
    /// No network load to diagnose.
    NoLoad = "no_load", false;
    /// Load ran and nothing saturated.
    NoCeiling = "no_ceiling", false;
    /// The CPUs waited on disk I/O: a disk, file system or swap held the work.
    IoWait = "io_wait", true;
    /// The receiver's advertised window held a TCP flow (tcp_info rwnd_limited).
    TcpReceiveWindow = "tcp_receive_window", true;
    /// The sender's socket buffer held a TCP flow (tcp_info sndbuf_limited).
    TcpSendBuffer = "tcp_send_buffer", true;
    /// An import whose data cannot be true of a real machine: not analyzed as truth.
    SuspectInput = "suspect_input", true;
    /// An unpaced run pushed, so something held it, but nothing measured saturated.
    UnnamedCeiling = "unnamed_ceiling", false;
    /// Latency grew under load because a queue held the packets (a qdisc's backlog, a queue on
    /// the path), sized against the growth of the round trip.
    Bufferbloat = "bufferbloat", true;
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for Cause {
    fn from(name: &str) -> Cause {
        Cause::from_name(name)
    }
}

impl From<String> for Cause {
    fn from(name: String) -> Cause {
        Cause::from_name(&name)
    }
}

impl PartialEq<str> for Cause {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Cause {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl serde::Serialize for Cause {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Cause {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Cause, D::Error> {
        let name = String::deserialize(d)?;
        Ok(Cause::from_name(&name))
    }
}

impl schemars::JsonSchema for Cause {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Cause".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let known: Vec<&str> = Cause::ALL.iter().map(Cause::as_str).collect();
        let ceilings: Vec<&str> = Cause::ALL
            .iter()
            .filter(|c| !c.names_ceiling())
            .map(Cause::as_str)
            .collect();
        schemars::json_schema!({
            "description": format!(
                "A cause's stable name. Known: {}. Those that name no ceiling: {}. Runs stored by another version may hold other names.",
                known.join(", "),
                ceilings.join(", ")
            ),
            "type": "string",
            "examples": known,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back_and_unknown_names_are_kept() {
        for c in Cause::ALL {
            assert_eq!(&Cause::from_name(c.as_str()), c);
            let json = serde_json::to_string(c).unwrap();
            assert_eq!(serde_json::from_str::<Cause>(&json).unwrap(), *c);
        }
        let future: Cause = serde_json::from_str("\"quantum_foam\"").unwrap();
        assert_eq!(future, Cause::Other("quantum_foam".into()));
        assert_eq!(serde_json::to_string(&future).unwrap(), "\"quantum_foam\"");
    }

    #[test]
    fn the_absences_name_no_ceiling() {
        let none: Vec<&str> = Cause::ALL
            .iter()
            .filter(|c| !c.names_ceiling())
            .map(Cause::as_str)
            .collect();
        assert_eq!(
            none,
            ["link_headroom", "no_load", "no_ceiling", "unnamed_ceiling"]
        );
        assert!(Cause::HotCpu.names_ceiling());
    }
}
