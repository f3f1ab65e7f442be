//! `/proc/net/tcp`, `tcp6`, `udp`, `udp6` (and the same under `/proc/PID/net/`, which shows
//! that process's network namespace): one row per socket with its local and remote address
//! and its inode, which ties it to the `socket:[INODE]` links under `/proc/PID/fd`.
//!
//! Layout: the kernel's `tcp4_seq_show`/`udp4_format_sock` and their IPv6 twins. After a
//! header line, each row is `sl: local rem st tx_queue:rx_queue tr:when retrnsmt uid timeout
//! inode …`. Addresses are hex `ADDR:PORT`: the port in network order as a number, the address
//! as the kernel's 32-bit words printed in host byte order (little endian on the machines
//! netceil runs on), 8 hex digits for IPv4 and 32 for IPv6.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::Line;
use crate::error::{Found, ParseError};

/// The file this parser is for (the sampler names the exact path).
pub const SOURCE: &str = "/proc/net/{tcp,tcp6,udp,udp6}";

/// One socket's endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketRow {
    pub local: SocketAddr,
    /// `0.0.0.0:0` (or `[::]:0`) when not connected.
    pub remote: SocketAddr,
    pub inode: u64,
}

fn word(hex: &str) -> Option<u32> {
    (hex.len() == 8)
        .then(|| u32::from_str_radix(hex, 16).ok())
        .flatten()
        // The kernel prints the word as it sits in memory, read as a host-order number.
        .map(|w| u32::from_be_bytes(w.to_le_bytes()))
}

/// `0100007F:1F90` → 127.0.0.1:8080; 32-digit addresses are IPv6.
fn endpoint(field: &str) -> Option<SocketAddr> {
    let (addr, port) = field.split_once(':')?;
    let port = u16::from_str_radix(port, 16)
        .ok()
        .filter(|_| port.len() == 4)?;
    let ip = match addr.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(addr)?)),
        32 => {
            let mut bytes = [0u8; 16];
            for i in 0..4 {
                bytes[i * 4..i * 4 + 4]
                    .copy_from_slice(&word(&addr[i * 8..i * 8 + 8])?.to_be_bytes());
            }
            IpAddr::V6(Ipv6Addr::from(bytes))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// Parses one socket table.
pub fn parse(text: &str) -> Result<Vec<SocketRow>, ParseError> {
    let mut rows = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let number = i + 1;
        if raw.trim().is_empty() || (i == 0 && raw.trim_start().starts_with("sl")) {
            continue;
        }
        let mut line = Line::new(SOURCE, number, raw);
        let sl = line.expect("a slot number `N:`")?;
        if !sl.ends_with(':') {
            return Err(line.error(Some(1), "a slot number `N:`", Found::text(sl)));
        }
        let mut addr = |what: &str| -> Result<SocketAddr, ParseError> {
            let f = line.expect(what)?;
            endpoint(f).ok_or_else(|| line.error(Some(line.fields_read()), what, Found::text(f)))
        };
        let local = addr("a local address `HEX:PORT`")?;
        let remote = addr("a remote address `HEX:PORT`")?;
        // st, tx_queue:rx_queue, tr:tm->when, retrnsmt, uid, timeout: not needed.
        for what in [
            "a state",
            "queues",
            "a timer",
            "retransmits",
            "a uid",
            "a timeout",
        ] {
            line.expect(what)?;
        }
        let inode = line.u64("an inode number")?;
        rows.push(SocketRow {
            local,
            remote,
            inode,
        });
    }
    Ok(rows)
}

/// Whether two sockets are the two ends of one exchange: one's remote is the other's local
/// address, a wildcard local address (`0.0.0.0`, `::`) matching any address on the same port.
/// An unconnected remote (`0.0.0.0:0`) matches nothing.
pub fn facing(a: &SocketRow, b: &SocketRow) -> bool {
    fn reaches(remote: SocketAddr, local: SocketAddr) -> bool {
        remote.port() != 0
            && remote.port() == local.port()
            && (remote.ip() == local.ip()
                || local.ip().is_unspecified()
                || v4_mapped(remote.ip()) == v4_mapped(local.ip()))
    }
    reaches(a.remote, b.local) || reaches(b.remote, a.local)
}

/// An IPv4-mapped IPv6 address as its IPv4 address, so a dual-stack socket meets an IPv4 one.
fn v4_mapped(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:14AB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 41234 1 0000000000000000 100 0 0 10 0
   1: 0100007F:14AB 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 41240 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:D2F0 0100007F:14AB 01 00000000:00000000 00:00000000 00000000     0        0 41239 1 0000000000000000 20 4 30 10 -1
";

    #[test]
    fn reads_a_tcp_table() {
        let rows = parse(TCP).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].local, "0.0.0.0:5291".parse().unwrap());
        assert_eq!(rows[1].local, "127.0.0.1:5291".parse().unwrap());
        assert_eq!(rows[1].remote, "127.0.0.1:54000".parse().unwrap());
        assert_eq!(rows[2].inode, 41239);
        // The client faces both the accepted socket and the listener.
        assert!(facing(&rows[2], &rows[1]));
        assert!(facing(&rows[2], &rows[0]));
        assert!(
            !facing(&rows[0], &rows[0]),
            "unconnected sockets face nothing"
        );
    }

    #[test]
    fn reads_ipv6_and_mapped_addresses() {
        let text = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
 7: 00000000000000000000000001000000:2328 00000000000000000000000000000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 5511 2 0000000000000000 0
 8: 0000000000000000FFFF00000100007F:2328 0000000000000000FFFF00000100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 5512 2 0000000000000000 0
";
        let rows = parse(text).unwrap();
        assert_eq!(rows[0].local, "[::1]:9000".parse().unwrap());
        assert_eq!(rows[1].local, "[::ffff:127.0.0.1]:9000".parse().unwrap());
        let v4 = SocketRow {
            local: "127.0.0.1:40000".parse().unwrap(),
            remote: "127.0.0.1:9000".parse().unwrap(),
            inode: 1,
        };
        assert!(
            facing(&v4, &rows[1]),
            "a dual-stack socket meets an IPv4 one"
        );
    }

    #[test]
    fn malformed_rows_name_line_and_field() {
        let bad = TCP.replace("0100007F:D2F0 01", "0100007G:D2F0 01");
        let e = parse(&bad).unwrap_err();
        assert_eq!((e.line, e.field), (3, Some(3)), "{e}");
        let cut = "  sl local\n   0: 00000000:14AB 00000000:0000 0A\n";
        let e = parse(cut).unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        let e = parse("   0 00000000:14AB 00000000:0000\n").unwrap_err();
        assert_eq!(e.field, Some(1), "{e}");
        let e = parse("   0: 00000000:14AB 00000000:0000 0A 0:0 0:0 0 0 0 x\n").unwrap_err();
        assert!(e.to_string().contains("inode"), "{e}");
    }
}
