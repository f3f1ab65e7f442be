//! `/proc/interrupts`: interrupts per IRQ and per CPU, and which device each IRQ belongs to.
//!
//! Format: the kernel's Documentation/filesystems/proc.rst, section "/proc/interrupts"; the
//! line layout is `show_interrupts()` in kernel/irq/proc.c. A header of `CPUn` columns, then
//! one row per IRQ: `N:`, a count per CPU, then a description. The description changed over
//! time, and this parser reads all of these:
//!
//! - 2.6: `IO-APIC-edge      timer` (chip and flow handler joined, then device names);
//! - x86 since ~3.x: `IR-PCI-MSI 1574912-edge      enp3s0f1` (chip, `hwirq-handler`, names);
//! - ARM: `GICv3  27 Level     arch_timer` (chip, hwirq, trigger, names);
//! - chips whose names hold spaces: `Hyper-V PCIe MSI 134250496-edge  mlx5_comp0@pci:…`.
//!
//! Several devices can share one IRQ (`ehci_hcd:usb1, uhci_hcd:usb7`), and a device name may
//! hold spaces (`PCIe PME`), so names are split on `", "` only. Architecture rows (`NMI`, `LOC`,
//! `RES`, `IPI0`, …) carry a count per CPU and a description; `ERR` and `MIS` carry one count.
//! The per-CPU counters are 32-bit (`unsigned int`) and wrap.
//!
//! [`nic_queue`] reads NIC queue names such as `eth0-TxRx-3` into interface, queue and
//! direction; [`classify`] tells device interrupts from timers and inter-processor interrupts.

use super::{cpu_header, first_line, parse_u64, token_spans, Line};
use crate::error::{Found, ParseError};

/// The file this parser is for.
pub const SOURCE: &str = "/proc/interrupts";

/// One row of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrqRow {
    /// The label before the colon: an IRQ number (`"38"`) or an architecture row (`"LOC"`).
    pub label: String,
    /// Counts in the order of [`Interrupts::cpus`]; a single value for `ERR` and `MIS`.
    pub counts: Vec<u64>,
    /// The interrupt chip (`IR-PCI-MSI`, `GICv3`, `IO-APIC-edge` on old kernels).
    pub chip: Option<String>,
    /// The hardware IRQ number within the chip's domain, when printed.
    pub hwirq: Option<String>,
    /// The flow handler or trigger (`edge`, `fasteoi`, `Level`), when printed separately.
    pub trigger: Option<String>,
    /// Names of the handlers sharing this IRQ (`eth0-TxRx-3`); empty for architecture rows.
    pub devices: Vec<String>,
    /// Everything after the counts, as printed (for `LOC`: "Local timer interrupts").
    pub description: String,
}

/// What raised an interrupt: a device, a timer, another CPU (an IPI), or something else.
///
/// The distinction matters because only device interrupts are work arriving from a NIC (or a
/// disk): a machine can take a million interrupts a second from its own timers and wake-ups
/// while no device interrupts it at all, as on loopback and veth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum IrqSource {
    Device,
    /// Local timer ticks and high-resolution timers (`LOC`, `arch_timer`, Hyper-V stimer).
    Timer,
    Ipi(IpiKind),
    /// NMIs, performance counters, thermal, machine checks, errors, hypervisor callbacks.
    Other,
}

/// The kinds of inter-processor interrupt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum IpiKind {
    /// `RES`: another CPU woke a task here (a cross-CPU wake-up).
    Reschedule,
    /// `CAL`: a function run on this CPU at another's request (smp_call_function).
    FunctionCall,
    /// `TLB`: TLB shootdowns (munmap, mprotect, page migration).
    Tlb,
    /// `IWI`: irq_work, deferred from NMI or hard-irq context.
    IrqWork,
    /// Wake-ups, CPU stop, and IPIs without a known name.
    Other,
}

impl IpiKind {
    /// The label value netceil records (`kind=reschedule`).
    pub fn as_str(self) -> &'static str {
        match self {
            IpiKind::Reschedule => "reschedule",
            IpiKind::FunctionCall => "call",
            IpiKind::Tlb => "tlb",
            IpiKind::IrqWork => "irq_work",
            IpiKind::Other => "other",
        }
    }
}

/// The source of a row, from its label and description: the named x86 rows by their
/// labels, the arm64 `IPIn` rows and anything else by their descriptions, numbered rows by
/// their handler names (a numbered `timer` or `arch_timer` row is a timer, not a device).
pub fn classify(label: &str, description: &str, devices: &[String]) -> IrqSource {
    let numbered = label.bytes().all(|b| b.is_ascii_digit());
    let d = description.to_ascii_lowercase();
    if numbered {
        let timer = devices
            .iter()
            .any(|n| n.contains("timer") || n.contains("clockevent"));
        let ipi = devices.iter().any(|n| n.starts_with("IPI"));
        return if timer {
            IrqSource::Timer
        } else if ipi {
            IrqSource::Ipi(ipi_kind(&d))
        } else {
            IrqSource::Device
        };
    }
    match label {
        "LOC" | "HVS" => return IrqSource::Timer,
        "RES" => return IrqSource::Ipi(IpiKind::Reschedule),
        "CAL" => return IrqSource::Ipi(IpiKind::FunctionCall),
        "TLB" => return IrqSource::Ipi(IpiKind::Tlb),
        "IWI" => return IrqSource::Ipi(IpiKind::IrqWork),
        _ => {}
    }
    if label.starts_with("IPI") || d.contains("ipi") {
        if d.contains("timer") {
            return IrqSource::Timer;
        }
        return IrqSource::Ipi(ipi_kind(&d));
    }
    if d.contains("timer") {
        return IrqSource::Timer;
    }
    if d.contains("rescheduling") || d.contains("function call") || d.contains("tlb shootdown") {
        return IrqSource::Ipi(ipi_kind(&d));
    }
    IrqSource::Other
}

fn ipi_kind(d: &str) -> IpiKind {
    if d.contains("resched") {
        IpiKind::Reschedule
    } else if d.contains("function call") || d.contains("call function") {
        IpiKind::FunctionCall
    } else if d.contains("tlb") {
        IpiKind::Tlb
    } else if d.contains("irq work") || d.contains("irq_work") {
        IpiKind::IrqWork
    } else {
        IpiKind::Other
    }
}

impl IrqRow {
    /// Device, timer, IPI or other (see [`classify`]).
    pub fn source(&self) -> IrqSource {
        classify(&self.label, &self.description, &self.devices)
    }

    /// The IRQ number, for numbered rows.
    pub fn irq(&self) -> Option<u32> {
        parse_u64(&self.label).and_then(|n| u32::try_from(n).ok())
    }

    /// The sum over CPUs.
    pub fn total(&self) -> u64 {
        self.counts.iter().fold(0u64, |a, &c| a.saturating_add(c))
    }
}

/// The parsed file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Interrupts {
    /// The CPU number of each count column (offline CPUs are not printed).
    pub cpus: Vec<u32>,
    pub rows: Vec<IrqRow>,
}

impl Interrupts {
    /// The row of a numbered IRQ.
    pub fn irq(&self, irq: u32) -> Option<&IrqRow> {
        self.rows.iter().find(|r| r.irq() == Some(irq))
    }

    /// The row with this label (`"LOC"`, `"ERR"`).
    pub fn row(&self, label: &str) -> Option<&IrqRow> {
        self.rows.iter().find(|r| r.label == label)
    }
}

/// Parses the text of `/proc/interrupts`.
pub fn parse(text: &str) -> Result<Interrupts, ParseError> {
    let (header_no, header) = first_line(SOURCE, text, "a header line of CPU columns")?;
    let cpus = cpu_header(SOURCE, header_no, header)?;
    let mut rows = Vec::new();
    for (i, raw) in text.lines().enumerate().skip(header_no) {
        let mut line = Line::new(SOURCE, i + 1, raw);
        let Some(first) = line.next_field() else {
            continue;
        };
        let label = first
            .strip_suffix(':')
            .filter(|l| !l.is_empty())
            .ok_or_else(|| {
                line.error(
                    Some(1),
                    "an IRQ number or name ending in ':'",
                    Found::text(first),
                )
            })?;
        let numbered = parse_u64(label).is_some();
        let mut counts = Vec::with_capacity(cpus.len());
        // Counts run until a non-number; named rows such as ERR have fewer than one per CPU.
        while counts.len() < cpus.len() {
            match line.peek_field().and_then(parse_u64) {
                Some(n) => {
                    line.next_field();
                    counts.push(n);
                }
                None => break,
            }
        }
        if counts.is_empty() || (numbered && counts.len() != cpus.len()) {
            let found = match line.next_field() {
                Some(f) => Found::text(f),
                None => Found::EndOfLine,
            };
            return Err(line.error(
                Some(counts.len() + 2),
                format!("{} per-CPU counts, as in the header", cpus.len()),
                found,
            ));
        }
        let description = line.rest();
        let (chip, hwirq, trigger, devices) = if numbered {
            split_description(description)
        } else {
            (None, None, None, Vec::new())
        };
        rows.push(IrqRow {
            label: label.to_string(),
            counts,
            chip,
            hwirq,
            trigger,
            devices,
            description: description.to_string(),
        });
    }
    Ok(Interrupts { cpus, rows })
}

type Description = (Option<String>, Option<String>, Option<String>, Vec<String>);

fn is_trigger_word(w: &str) -> bool {
    matches!(w, "Level" | "Edge" | "level" | "edge")
}

/// `12345-edge` or `-edge`: a hwirq number joined to the flow handler's name.
fn hwirq_handler(token: &str) -> Option<(&str, &str)> {
    let (num, handler) = token.split_once('-')?;
    let ok = num.bytes().all(|b| b.is_ascii_digit())
        && !handler.is_empty()
        && handler
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    ok.then_some((num, handler))
}

/// Splits `chip [hwirq] [trigger] names` into its parts (see the module docs for the layouts).
fn split_description(desc: &str) -> Description {
    let tokens: Vec<(usize, &str)> = token_spans(desc).collect();
    if tokens.is_empty() {
        return (None, None, None, Vec::new());
    }
    // Modern x86: the first `digits-handler` token after the chip.
    for (k, &(start, tok)) in tokens.iter().enumerate().skip(1) {
        if let Some((num, handler)) = hwirq_handler(tok) {
            let chip = desc[..start].trim();
            let names = &desc[start + tok.len()..];
            return (
                Some(chip.to_string()),
                (!num.is_empty()).then(|| num.to_string()),
                Some(handler.to_string()),
                split_names(names),
            );
        }
        // ARM and others: `chip hwirq Level|Edge names`.
        if is_trigger_word(tok) && k >= 2 && parse_u64(tokens[k - 1].1).is_some() {
            let chip = desc[..tokens[k - 1].0].trim();
            let names = &desc[start + tok.len()..];
            return (
                Some(chip.to_string()),
                Some(tokens[k - 1].1.to_string()),
                Some(tok.to_string()),
                split_names(names),
            );
        }
    }
    // Old kernels: `IO-APIC-edge  names`.
    let (start, chip) = tokens[0];
    (
        Some(chip.to_string()),
        None,
        None,
        split_names(&desc[start + chip.len()..]),
    )
}

fn split_names(s: &str) -> Vec<String> {
    s.split(", ")
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

/// Which way a NIC queue's interrupt carries traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueueDirection {
    Rx,
    Tx,
    /// A combined queue pair (`TxRx`), or a completion queue serving both.
    RxTx,
}

impl QueueDirection {
    /// `rx`, `tx` or `rxtx`, as used in metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueDirection::Rx => "rx",
            QueueDirection::Tx => "tx",
            QueueDirection::RxTx => "rxtx",
        }
    }
}

/// What an IRQ name says about the device that owns the queue.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueueOwner {
    /// An interface name as written in the IRQ name. IRQ names are set when the driver asks
    /// for the IRQ, so after a rename this can be the old name.
    Iface(String),
    /// A PCI address (`0000:81:00.0`), as mlx5 and gve print.
    Pci(String),
    /// A virtio device number (`virtio2` → 2); its interface is the one whose device is `virtioN`.
    Virtio(u32),
    /// Only the driver is named (`iwlwifi`).
    Driver(String),
}

/// A NIC queue read from an IRQ's device name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NicQueue {
    pub owner: QueueOwner,
    /// The queue number, when the name has one.
    pub queue: Option<u32>,
    pub direction: QueueDirection,
}

/// Driver prefixes put before the interface name (`i40e-eth0-TxRx-1`).
const DRIVER_PREFIXES: [&str; 4] = ["i40e-", "ice-", "iavf-", "idpf-"];

/// Reads a NIC queue out of an IRQ device name, or `None` for names that are not NIC queues
/// (including a NIC's own non-queue vectors: `mlx5_async…`, `virtio0-config`, `…:misc`).
///
/// Recognised forms:
/// - `eth0-TxRx-3`, `eth0-rx-0`, `eth0-tx-0`, `ens5-Tx-Rx-0` (ENA), `eth0-fp-2` (bnx2x);
/// - `i40e-eth0-TxRx-1`, `ice-ens1f0-TxRx-0` (the driver prefix is dropped);
/// - `mlx5_comp2@pci:0000:81:00.0`, `gve-ntfy-blk0@pci:0000:00:04.0`;
/// - `virtio0-input.0` (rx), `virtio0-output.0` (tx), `virtio0-virtqueues` (shared vector);
/// - `iwlwifi:queue_1`, `iwlwifi:default_queue`.
///
/// A bare interface name (`eth0`, one vector for everything) cannot be told from other device
/// names here; the sampler matches those against the interfaces it knows.
pub fn nic_queue(name: &str) -> Option<NicQueue> {
    if let Some((prefix, addr)) = name.split_once("@pci:") {
        let is_queue = prefix.contains("comp") || prefix.contains("ntfy");
        let digits = prefix.len() - prefix.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        if !is_queue || digits == 0 || addr.is_empty() {
            return None;
        }
        let queue = prefix[prefix.len() - digits..].parse().ok()?;
        return Some(NicQueue {
            owner: QueueOwner::Pci(addr.to_string()),
            queue: Some(queue),
            direction: QueueDirection::RxTx,
        });
    }
    if let Some(rest) = name.strip_prefix("virtio") {
        let (dev, vq) = rest.split_once('-')?;
        let dev: u32 = parse_u64(dev)?.try_into().ok()?;
        let (direction, queue) = if let Some(q) = vq.strip_prefix("input.") {
            (QueueDirection::Rx, Some(parse_u64(q)?.try_into().ok()?))
        } else if let Some(q) = vq.strip_prefix("output.") {
            (QueueDirection::Tx, Some(parse_u64(q)?.try_into().ok()?))
        } else if vq == "virtqueues" {
            (QueueDirection::RxTx, None)
        } else {
            return None;
        };
        return Some(NicQueue {
            owner: QueueOwner::Virtio(dev),
            queue,
            direction,
        });
    }
    if let Some((driver, q)) = name.split_once(':') {
        if driver == "iwlwifi" {
            let queue = if q == "default_queue" {
                None
            } else {
                Some(parse_u64(q.strip_prefix("queue_")?)?.try_into().ok()?)
            };
            return Some(NicQueue {
                owner: QueueOwner::Driver(driver.to_string()),
                queue,
                direction: QueueDirection::Rx,
            });
        }
        return None;
    }
    // `<iface>-<kind>-<n>`: split the queue number, then match the kind at the end.
    let (head, num) = name.rsplit_once('-')?;
    let queue: u32 = parse_u64(num)?.try_into().ok()?;
    const KINDS: [(&str, QueueDirection); 8] = [
        ("-tx-rx", QueueDirection::RxTx),
        ("-rx-tx", QueueDirection::RxTx),
        ("-txrx", QueueDirection::RxTx),
        ("-rxtx", QueueDirection::RxTx),
        ("-combined", QueueDirection::RxTx),
        ("-fp", QueueDirection::RxTx),
        ("-rx", QueueDirection::Rx),
        ("-tx", QueueDirection::Tx),
    ];
    let lower = head.to_ascii_lowercase();
    for (kind, direction) in KINDS {
        if lower.ends_with(kind) {
            let mut iface = &head[..head.len() - kind.len()];
            for p in DRIVER_PREFIXES {
                if let Some(stripped) = iface.strip_prefix(p) {
                    if !stripped.is_empty() {
                        iface = stripped;
                    }
                }
            }
            if iface.is_empty() {
                return None;
            }
            return Some(NicQueue {
                owner: QueueOwner::Iface(iface.to_string()),
                queue: Some(queue),
                direction,
            });
        }
    }
    None
}
