//! What /sys says about one network interface: state, speed, MTU, driver, queues, IRQs.
//!
//! Reads `/sys/class/net/IF/{operstate,speed,mtu}`, the `device` and `device/driver` links,
//! the `queues/` directory and the device's `msi_irqs/` through a [`Source`]. Attribute
//! meanings: Documentation/ABI/testing/sysfs-class-net. Virtual interfaces have no `device`,
//! and many report no speed; those fields are `None`, never a made-up value.

use netceil_model::NicInfo;

use crate::error::SourceError;
use crate::parse::sys_net::{self, OperState};
use crate::Source;

/// The interface directory (`/sys/class/net/eth0`).
pub fn sys_dir(iface: &str) -> String {
    format!("/sys/class/net/{iface}")
}

/// Static facts about an interface, refreshed now and then by the sampler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfaceInfo {
    pub name: String,
    /// `Err` when `operstate` could not be read.
    pub operstate: Result<OperState, SourceError>,
    /// Link speed in Mbit/s; `None` when the driver does not know (virtio, loopback, link down).
    pub speed_mbit: Option<u64>,
    pub mtu: Option<u32>,
    /// The driver's name (`ixgbe`, `virtio_net`), from the `device/driver` link.
    pub driver: Option<String>,
    /// The device's name in its bus (`0000:81:00.0`, `virtio2`), from the `device` link.
    pub device: Option<String>,
    pub rx_queues: Option<u32>,
    pub tx_queues: Option<u32>,
    /// The device's MSI/MSI-X interrupt numbers, from `device/msi_irqs` (for virtio, the
    /// parent PCI function's).
    pub msi_irqs: Vec<u32>,
    /// Whether /sys/class/net/IF points under /sys/devices/virtual (lo, veth, bridge…).
    pub virtual_device: Option<bool>,
}

impl IfaceInfo {
    /// Whether traffic can flow (`up`, or `unknown` as loopback reports); an unreadable
    /// operstate counts as usable, so that nothing is hidden for lack of one file.
    pub fn is_usable(&self) -> bool {
        self.operstate.as_ref().map_or(true, |s| s.is_usable())
    }

    /// The model's summary of this interface.
    pub fn nic_info(&self) -> NicInfo {
        NicInfo {
            name: self.name.clone(),
            driver: self.driver.clone(),
            speed_mbit: self.speed_mbit,
            mtu: self.mtu,
            rx_queues: self.rx_queues,
            tx_queues: self.tx_queues,
            virtual_device: self.virtual_device,
        }
    }
}

/// Reads everything [`IfaceInfo`] holds for `iface`; `buf` is a scratch buffer.
pub fn read_info<S: Source + ?Sized>(source: &S, iface: &str, buf: &mut String) -> IfaceInfo {
    let dir = sys_dir(iface);
    let operstate = read_operstate(source, iface, buf);
    let mut read = |name: &str| -> Option<String> {
        source.read_into(&format!("{dir}/{name}"), buf).ok()?;
        Some(buf.clone())
    };
    // Reading `speed` fails with EINVAL on loopback and on links that are down: unknown.
    let speed_mbit = read("speed").and_then(|t| sys_net::parse_speed(&t).ok().flatten());
    let mtu = read("mtu").and_then(|t| sys_net::parse_mtu(&t).ok());
    let link = |p: &str| {
        source
            .read_link(&format!("{dir}/{p}"))
            .ok()
            .and_then(|t| sys_net::link_basename(&t).map(str::to_string))
    };
    let device = link("device");
    let driver = link("device/driver");
    let (rx_queues, tx_queues) = match source.list_dir(&format!("{dir}/queues")) {
        Ok(entries) => {
            let (rx, tx) = sys_net::count_queues(entries.iter().map(String::as_str));
            (Some(rx), Some(tx))
        }
        Err(_) => (None, None),
    };
    let msi_irqs = match &device {
        None => Vec::new(),
        Some(dev) => {
            // virtio devices sit below the PCI function that owns the vectors.
            let path = if dev.starts_with("virtio") {
                format!("{dir}/device/../msi_irqs")
            } else {
                format!("{dir}/device/msi_irqs")
            };
            let mut irqs: Vec<u32> = source
                .list_dir(&path)
                .unwrap_or_default()
                .iter()
                .filter_map(|n| n.parse().ok())
                .collect();
            irqs.sort_unstable();
            irqs
        }
    };
    let virtual_device = source
        .read_link(&dir)
        .ok()
        .map(|t| t.contains("/devices/virtual/"));
    IfaceInfo {
        name: iface.to_string(),
        virtual_device,
        operstate,
        speed_mbit,
        mtu,
        driver,
        device,
        rx_queues,
        tx_queues,
        msi_irqs,
    }
}

/// `/sys/class/net/IF/operstate` alone: what the sampler reads between full readings.
pub fn read_operstate<S: Source + ?Sized>(
    source: &S,
    iface: &str,
    buf: &mut String,
) -> Result<OperState, SourceError> {
    let path = format!("{}/operstate", sys_dir(iface));
    match source.read_into(&path, buf) {
        Ok(()) => sys_net::parse_operstate(buf).map_err(|e| SourceError::parse(&path, e)),
        Err(_) => Err(SourceError {
            path,
            reason: "could not be read".into(),
        }),
    }
}

/// One counter from `/sys/class/net/IF/statistics/NAME`.
pub fn read_counter<S: Source + ?Sized>(
    source: &S,
    iface: &str,
    name: &str,
    buf: &mut String,
) -> Result<u64, SourceError> {
    let path = format!("{}/statistics/{name}", sys_dir(iface));
    source
        .read_into(&path, buf)
        .map_err(|e| SourceError::io(&path, &e))?;
    sys_net::parse_counter(buf).map_err(|e| SourceError::parse(&path, e))
}
