//! The shared secret and the HMAC challenge: the client proves it holds the key without
//! sending it, and the server proves it back.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::path::Path;

type HmacSha256 = Hmac<Sha256>;

/// Bytes in a nonce.
pub const NONCE_LEN: usize = 16;
/// The shortest key accepted, bytes.
const MIN_KEY: usize = 16;
/// The longest key file read, bytes.
const MAX_KEY: usize = 4096;

/// A shared secret, read from a file.
#[derive(Clone)]
pub struct Key(Vec<u8>);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Key({} bytes)", self.0.len())
    }
}

/// Why a key file was refused.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: the key is {len} bytes; at least {MIN_KEY} are needed (e.g. head -c 32 /dev/urandom | base64 > {path})")]
    Short { path: String, len: usize },
    #[error("{path}: over {MAX_KEY} bytes; a key file holds one secret")]
    Long { path: String },
}

impl Key {
    /// Reads a key file: its bytes with surrounding whitespace removed (so `echo secret > f`
    /// and a base64 line both work), at least 16 of them. At most [`MAX_KEY`] + 1 bytes are
    /// read, whatever the file says its length is (`/dev/zero` says 0).
    pub fn from_file(path: &Path) -> Result<Key, KeyError> {
        use netceil_model::input::{read_bytes, InputError};
        let shown = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|source| KeyError::Read {
            path: shown.clone(),
            source,
        })?;
        let raw = read_bytes(file, &shown, MAX_KEY).map_err(|e| match e {
            InputError::Read { source, .. } => KeyError::Read {
                path: shown.clone(),
                source,
            },
            _ => KeyError::Long {
                path: shown.clone(),
            },
        })?;
        Key::from_bytes(&raw).ok_or(KeyError::Short {
            path: shown,
            len: raw.trim_ascii().len(),
        })
    }

    /// A key from bytes (whitespace around them removed); `None` under 16 bytes.
    pub fn from_bytes(raw: &[u8]) -> Option<Key> {
        let k = raw.trim_ascii();
        (k.len() >= MIN_KEY).then(|| Key(k.to_vec()))
    }

    /// HMAC-SHA256 over a domain label and the parts, each length-prefixed so that no two
    /// different part lists hash the same bytes.
    pub fn mac(&self, label: &str, parts: &[&[u8]]) -> [u8; 32] {
        let mut m = self.keyed();
        feed(&mut m, label, parts);
        m.finalize().into_bytes().into()
    }

    /// Checks a MAC in constant time.
    pub fn verify(&self, label: &str, parts: &[&[u8]], mac_hex: &str) -> bool {
        let Some(tag) = unhex(mac_hex) else {
            return false;
        };
        let mut m = self.keyed();
        feed(&mut m, label, parts);
        m.verify_slice(&tag).is_ok()
    }

    fn keyed(&self) -> HmacSha256 {
        // HMAC takes a key of any length; this cannot fail.
        <HmacSha256 as Mac>::new_from_slice(&self.0).unwrap_or_else(|_| unreachable!())
    }
}

fn feed(m: &mut HmacSha256, label: &str, parts: &[&[u8]]) {
    m.update(&(label.len() as u64).to_be_bytes());
    m.update(label.as_bytes());
    for p in parts {
        m.update(&(p.len() as u64).to_be_bytes());
        m.update(p);
    }
}

/// A fresh random nonce from the kernel.
pub fn fresh_nonce() -> std::io::Result<[u8; NONCE_LEN]> {
    let mut n = [0u8; NONCE_LEN];
    getrandom::fill(&mut n).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(n)
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Hex back to bytes; `None` for odd lengths or other characters.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mac_verifies_only_with_the_same_key_and_parts() {
        let k = Key::from_bytes(b"  correct horse battery staple\n").unwrap();
        let other = Key::from_bytes(b"correct horse battery stable").unwrap();
        let tag = hex(&k.mac("req", &[b"ab", b"c"]));
        assert!(k.verify("req", &[b"ab", b"c"], &tag));
        assert!(!other.verify("req", &[b"ab", b"c"], &tag));
        assert!(!k.verify("req", &[b"a", b"bc"], &tag), "parts are framed");
        assert!(
            !k.verify("grant", &[b"ab", b"c"], &tag),
            "labels separate uses"
        );
        assert!(!k.verify("req", &[b"ab", b"c"], "zz"));
        assert!(!k.verify("req", &[b"ab", b"c"], &tag[..10]));
        assert!(Key::from_bytes(b"short").is_none());
        assert_eq!(unhex(&hex(&[0, 255, 16])), Some(vec![0, 255, 16]));
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("é1"), None);
    }

    #[test]
    fn key_files_are_checked() {
        let dir = std::env::temp_dir().join(format!("netceil-ctl-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let short = dir.join("short");
        std::fs::write(&short, "abc\n").unwrap();
        let e = Key::from_file(&short).unwrap_err().to_string();
        assert!(e.contains("short") && e.contains("3 bytes"), "{e}");
        let e = Key::from_file(&dir.join("absent")).unwrap_err().to_string();
        assert!(e.contains("absent"), "{e}");
        let good = dir.join("good");
        std::fs::write(&good, "0123456789abcdef0123\n").unwrap();
        assert!(Key::from_file(&good).is_ok());
        let long = dir.join("long");
        std::fs::write(&long, "k".repeat(MAX_KEY)).unwrap();
        assert!(Key::from_file(&long).is_ok());
        std::fs::write(&long, "k".repeat(MAX_KEY + 1)).unwrap();
        let e = Key::from_file(&long).unwrap_err().to_string();
        assert!(e.contains("over 4096 bytes"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
        // Devices say their length is 0; the read is bounded all the same.
        for endless in ["/dev/zero", "/dev/urandom"] {
            let e = Key::from_file(Path::new(endless)).unwrap_err().to_string();
            assert!(e.contains(endless) && e.contains("over 4096 bytes"), "{e}");
        }
    }
}
