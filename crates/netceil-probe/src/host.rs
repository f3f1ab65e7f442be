//! What the machine is: kernel, CPUs, interfaces. Recorded in every Run's meta.

use crate::iface::read_info;
use crate::Source;
use netceil_model::HostInfo;

/// Reads host facts through `source` (/proc/sys/kernel and /sys/class/net); anything
/// unreadable is left `None`. The CPU count is what this process may run on.
pub fn host_info<S: Source + ?Sized>(source: &S) -> HostInfo {
    let kernel = |name: &str| {
        source
            .read(&format!("/proc/sys/kernel/{name}"))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let mut buf = String::new();
    let nics = source
        .list_dir("/sys/class/net")
        .map(|names| {
            names
                .iter()
                .map(|n| read_info(source, n, &mut buf).nic_info())
                .collect()
        })
        .unwrap_or_default();
    HostInfo {
        hostname: kernel("hostname"),
        os: kernel("ostype"),
        kernel: kernel("osrelease"),
        cpus: std::thread::available_parallelism()
            .ok()
            .map(|n| n.get() as u32),
        nics,
        sched_autogroup: kernel("sched_autogroup_enabled").map(|v| v != "0"),
    }
}

/// `net.core.rmem_max` read through `source`: what the kernel clamps a plain SO_RCVBUF request
/// to; `None` when unreadable.
pub fn rmem_max<S: Source + ?Sized>(source: &S) -> Option<usize> {
    source
        .read("/proc/sys/net/core/rmem_max")
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FakeSource;

    #[test]
    fn host_facts_come_from_the_source() {
        let s = FakeSource::new();
        s.set("/proc/sys/kernel/hostname", "lab1\n");
        s.set("/proc/sys/kernel/ostype", "Linux\n");
        s.set("/proc/sys/kernel/osrelease", "6.18.0\n");
        s.set("/sys/class/net/eth0/mtu", "9000\n");
        s.set("/sys/class/net/eth0/speed", "25000\n");
        s.set("/sys/class/net/eth0/operstate", "up\n");
        s.set_link(
            "/sys/class/net/eth0/device/driver",
            "../../bus/pci/drivers/mlx5_core",
        );
        s.set("/sys/class/net/lo/mtu", "65536\n");
        let h = host_info(&s);
        assert_eq!(h.hostname.as_deref(), Some("lab1"));
        assert_eq!(h.os.as_deref(), Some("Linux"));
        assert_eq!(h.kernel.as_deref(), Some("6.18.0"));
        assert_eq!(h.sched_autogroup, None, "unreadable: unknown");
        s.set("/proc/sys/kernel/sched_autogroup_enabled", "1\n");
        assert_eq!(host_info(&s).sched_autogroup, Some(true));
        s.set("/proc/sys/kernel/sched_autogroup_enabled", "0\n");
        assert_eq!(host_info(&s).sched_autogroup, Some(false));
        let names: Vec<&str> = h.nics.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["eth0", "lo"]);
        assert_eq!(h.nics[0].mtu, Some(9000));
        assert_eq!(h.nics[0].speed_mbit, Some(25000));
        assert_eq!(h.nics[0].driver.as_deref(), Some("mlx5_core"));
        // A file that cannot be read is unknown, not a failure.
        s.remove("/proc/sys/kernel/hostname");
        assert_eq!(host_info(&s).hostname, None);
    }
}
