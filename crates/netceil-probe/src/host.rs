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

/// The size of `cpu`'s level-2 cache (data or unified), bytes, from
/// /sys/devices/system/cpu/cpuN/cache/indexK/{level,type,size}; `None` when no entry says
/// level 2 or its size does not read as `<number>K|M`.
pub fn l2_cache_bytes<S: Source + ?Sized>(source: &S, cpu: usize) -> Option<usize> {
    let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cache");
    let mut names = source.list_dir(&dir).ok()?;
    names.sort();
    names
        .iter()
        .filter(|n| n.starts_with("index"))
        .find_map(|n| {
            let field = |f: &str| source.read(&format!("{dir}/{n}/{f}")).ok();
            if field("level")?.trim() != "2" {
                return None;
            }
            if field("type").is_some_and(|t| t.trim() == "Instruction") {
                return None;
            }
            cache_size(&field("size")?)
        })
}

/// A cache size as sysfs writes it: `1024K`, `2M`, or bytes.
fn cache_size(text: &str) -> Option<usize> {
    let t = text.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let n: usize = digits.parse().ok()?;
    let k = match unit {
        "" => 1,
        "K" => 1024,
        "M" => 1024 * 1024,
        _ => return None,
    };
    n.checked_mul(k).filter(|&b| b > 0)
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

    #[test]
    fn the_l2_size_is_the_level_2_data_or_unified_entry() {
        let s = FakeSource::new();
        let d = "/sys/devices/system/cpu/cpu1/cache";
        for (i, level, kind, size) in [
            (0, "1", "Data", "32K"),
            (1, "1", "Instruction", "32K"),
            (2, "2", "Unified", "1024K"),
            (3, "3", "Unified", "32768K"),
        ] {
            s.set(&format!("{d}/index{i}/level"), format!("{level}\n"));
            s.set(&format!("{d}/index{i}/type"), format!("{kind}\n"));
            s.set(&format!("{d}/index{i}/size"), format!("{size}\n"));
        }
        assert_eq!(l2_cache_bytes(&s, 1), Some(1 << 20));
        assert_eq!(l2_cache_bytes(&s, 0), None, "no such CPU");
        s.set(&format!("{d}/index2/size"), "2M\n");
        assert_eq!(l2_cache_bytes(&s, 1), Some(2 << 20));
        // Malformed sizes are unknown, never a guess.
        for bad in ["", "K", "12Q", "0K", "-5K", "99999999999999999999999K"] {
            s.set(&format!("{d}/index2/size"), bad);
            assert_eq!(l2_cache_bytes(&s, 1), None, "{bad:?}");
        }
    }

    #[test]
    fn this_machine_s_l2_reads_if_sysfs_has_it() {
        let real = crate::ProcFs::new();
        if std::path::Path::new("/sys/devices/system/cpu/cpu0/cache/index2/size").exists() {
            let b = l2_cache_bytes(&real, 0).expect("a readable L2 size");
            assert!((64 * 1024..=64 << 20).contains(&b), "{b}");
        } else {
            eprintln!("skipped: this machine's sysfs has no cache entries for cpu0");
        }
    }
}
