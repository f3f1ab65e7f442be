//! What the machine is: kernel, CPUs, interfaces. Recorded in every Run's meta.

use netceil_model::{HostInfo, NicInfo};

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Reads host facts from /proc and /sys; anything unreadable is left `None`.
pub fn host_info() -> HostInfo {
    let uname = nix::sys::utsname::uname().ok();
    let nics = std::fs::read_dir("/sys/class/net")
        .map(|d| {
            let mut names: Vec<String> = d
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names.into_iter().map(|n| nic_info(&n)).collect()
        })
        .unwrap_or_default();
    HostInfo {
        hostname: uname
            .as_ref()
            .map(|u| u.nodename().to_string_lossy().into_owned()),
        os: uname
            .as_ref()
            .map(|u| u.sysname().to_string_lossy().into_owned()),
        kernel: uname
            .as_ref()
            .map(|u| u.release().to_string_lossy().into_owned()),
        cpus: std::thread::available_parallelism()
            .ok()
            .map(|n| n.get() as u32),
        nics,
    }
}

fn nic_info(name: &str) -> NicInfo {
    let base = format!("/sys/class/net/{name}");
    let count_queues = |prefix: &str| {
        std::fs::read_dir(format!("{base}/queues")).ok().map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
                .count() as u32
        })
    };
    NicInfo {
        name: name.to_string(),
        driver: std::fs::read_link(format!("{base}/device/driver"))
            .ok()
            .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned())),
        // Virtual devices answer -1 or EINVAL: unknown, not zero.
        speed_mbit: read_trim(&format!("{base}/speed"))
            .and_then(|s| s.parse::<i64>().ok())
            .and_then(|v| u64::try_from(v).ok().filter(|v| *v > 0)),
        mtu: read_trim(&format!("{base}/mtu")).and_then(|s| s.parse().ok()),
        rx_queues: count_queues("rx-"),
        tx_queues: count_queues("tx-"),
        virtual_device: std::fs::read_link(&base)
            .ok()
            .map(|p| p.to_string_lossy().contains("/devices/virtual/")),
    }
}
