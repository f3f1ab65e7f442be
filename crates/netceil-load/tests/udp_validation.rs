//! Bad UDP configurations are rejected before any socket exists, with a message naming the flag.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use netceil_load::udp::{run_udp, UdpConfig};
use netceil_load::LoadError;
use netceil_model::{PacingMode, Rate};

fn rejects(cfg: UdpConfig, flag: &str) {
    let err = cfg.validate().expect_err(flag);
    assert!(matches!(err, LoadError::InvalidConfig(_)), "{err:?}");
    assert!(err.is_usage());
    assert!(err.to_string().contains(flag), "{flag}: {err}");
    // run_udp refuses the same configuration without sending anything.
    let stop = AtomicBool::new(false);
    assert!(run_udp(&cfg, &stop, &mut |_| {}).is_err());
}

#[test]
fn bad_configurations_name_the_flag() {
    let ok = UdpConfig::default();
    assert!(ok.validate().is_ok());
    rejects(
        UdpConfig {
            payload_bytes: 17,
            ..ok.clone()
        },
        "--size",
    );
    rejects(
        UdpConfig {
            payload_bytes: 65_508,
            ..ok.clone()
        },
        "--size",
    );
    rejects(
        UdpConfig {
            payload_bytes: 65_528,
            ipv6: true,
            ..ok.clone()
        },
        "--size",
    );
    rejects(
        UdpConfig {
            rate: Some(Rate::PacketsPerSecond(0.0)),
            ..ok.clone()
        },
        "--rate",
    );
    rejects(
        UdpConfig {
            rate: Some(Rate::BitsPerSecond(-1.0)),
            ..ok.clone()
        },
        "--rate",
    );
    rejects(
        UdpConfig {
            interval_ns: Some(0.0),
            ..ok.clone()
        },
        "--interval",
    );
    rejects(
        UdpConfig {
            rate: Some(Rate::PacketsPerSecond(10.0)),
            interval_ns: Some(1000.0),
            ..ok.clone()
        },
        "--interval",
    );
    rejects(
        UdpConfig {
            rate: Some(Rate::PacketsPerSecond(10.0)),
            pacing: PacingMode::None,
            ..ok.clone()
        },
        "--pacing",
    );
    rejects(
        UdpConfig {
            count: Some(0),
            ..ok.clone()
        },
        "--count",
    );
    rejects(
        UdpConfig {
            flows: 0,
            ..ok.clone()
        },
        "--flows",
    );
    rejects(
        UdpConfig {
            flows: 70_000,
            threads: 1,
            ..ok.clone()
        },
        "--flows",
    );
    rejects(
        UdpConfig {
            threads: 0,
            ..ok.clone()
        },
        "--threads",
    );
    rejects(
        UdpConfig {
            threads: 3,
            flows: 2,
            ..ok.clone()
        },
        "--threads",
    );
    rejects(
        UdpConfig {
            burst: 0,
            ..ok.clone()
        },
        "--burst",
    );
    rejects(
        UdpConfig {
            burst: 8,
            ..ok.clone()
        },
        "--burst",
    );
    rejects(
        UdpConfig {
            duration: Duration::ZERO,
            ..ok.clone()
        },
        "--duration",
    );
    rejects(
        UdpConfig {
            rcvbuf: Some(0),
            ..ok.clone()
        },
        "--rcvbuf",
    );
    rejects(
        UdpConfig {
            ipv6: true,
            target: Some("127.0.0.1:9".parse().unwrap()),
            ..ok.clone()
        },
        "--ipv6",
    );
}

#[test]
fn gso_settings_the_kernel_cannot_take_are_refused() {
    let ok = UdpConfig {
        payload_bytes: 1400,
        ..UdpConfig::default()
    };
    assert!(UdpConfig {
        gso: true,
        ..ok.clone()
    }
    .validate()
    .is_ok());
    rejects(
        UdpConfig {
            gso: true,
            payload_bytes: 40_000,
            ..ok.clone()
        },
        "--gso",
    );
    rejects(
        UdpConfig {
            gso: true,
            gso_segments: Some(65),
            ..ok.clone()
        },
        "--gso-segments",
    );
    rejects(
        UdpConfig {
            gso_segments: Some(8),
            ..ok.clone()
        },
        "--gso-segments",
    );
}

#[test]
fn largest_payloads_are_accepted() {
    let v4 = UdpConfig {
        payload_bytes: 65_507,
        ..UdpConfig::default()
    };
    assert!(v4.validate().is_ok());
    let v6 = UdpConfig {
        payload_bytes: 65_527,
        ipv6: true,
        ..UdpConfig::default()
    };
    assert!(v6.validate().is_ok());
    // And the largest IPv4 payload really goes through loopback unfragmented.
    let stop = AtomicBool::new(false);
    let o = run_udp(
        &UdpConfig {
            count: Some(50),
            ..v4
        },
        &stop,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(o.results.tx_packets, 50);
    assert_eq!(o.results.unexplained_packets, 0);
}
