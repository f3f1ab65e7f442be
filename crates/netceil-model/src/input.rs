//! Bounded reading of what a person hands netceil: a key file, a log, standard input.
//!
//! A file's length says nothing about what a read will return (`/dev/zero`, `/dev/urandom`
//! and a pipe all report 0), so the bound is kept while reading: at most the limit plus one
//! buffer is ever held, whatever the source. Text is also read line by line against a line
//! limit, so that one endless line is refused at its number after a bounded read rather
//! than taken whole.
//!
//! The reader is handed in; this module opens nothing itself.

use std::io::{BufRead, BufReader, ErrorKind, Read};

/// Bytes read at a time.
const CHUNK: usize = 64 * 1024;

/// How much text a source may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextLimits {
    /// Bytes in all.
    pub max_bytes: usize,
    /// Bytes in one line, its newline not counted.
    pub max_line: usize,
}

/// Why an input was refused. Every message starts with the source's name (`-` for standard
/// input) and, where one line is at fault, its 1-based number: `NAME:LINE: …`.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{name}: {source}")]
    Read {
        name: String,
        source: std::io::Error,
    },
    #[error("{name}: more than {}, the most netceil reads from it", size(*.limit))]
    TooLarge { name: String, limit: usize },
    #[error("{name}:{line}: line longer than {}, the longest line netceil reads", size(*.limit))]
    LineTooLong {
        name: String,
        line: usize,
        limit: usize,
    },
    #[error("{name}:{line}: not text (invalid UTF-8 at byte {offset} of the file)")]
    NotText {
        name: String,
        line: usize,
        offset: usize,
    },
}

/// `1 MiB (1048576 bytes)`, `4 KiB (4096 bytes)`, `10 bytes`: a limit as people say it, and
/// exactly.
fn size(bytes: usize) -> String {
    const MIB: usize = 1 << 20;
    const KIB: usize = 1 << 10;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB ({bytes} bytes)", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB ({bytes} bytes)", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// Reads every byte of `reader`, refusing a source longer than `limit` bytes after reading at
/// most `limit + 1` of them.
pub fn read_bytes(reader: impl Read, name: &str, limit: usize) -> Result<Vec<u8>, InputError> {
    let mut out = Vec::new();
    reader
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|source| InputError::Read {
            name: name.to_string(),
            source,
        })?;
    if out.len() > limit {
        return Err(InputError::TooLarge {
            name: name.to_string(),
            limit,
        });
    }
    Ok(out)
}

/// Reads `reader` as UTF-8 text within `limits`: a line over `max_line` bytes is refused as
/// soon as it passes the limit, with its number; so is a source over `max_bytes`.
pub fn read_text(reader: impl Read, name: &str, limits: TextLimits) -> Result<String, InputError> {
    let mut r = BufReader::with_capacity(CHUNK, reader);
    let mut out: Vec<u8> = Vec::new();
    // The 1-based number of the line being read, and its bytes so far.
    let (mut line, mut in_line) = (1usize, 0usize);
    loop {
        let chunk = match r.fill_buf() {
            Ok([]) => break,
            Ok(c) => c,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(InputError::Read {
                    name: name.to_string(),
                    source,
                })
            }
        };
        if out.len() + chunk.len() > limits.max_bytes {
            return Err(InputError::TooLarge {
                name: name.to_string(),
                limit: limits.max_bytes,
            });
        }
        for piece in chunk.split_inclusive(|b| *b == b'\n') {
            let ends = piece.last() == Some(&b'\n');
            in_line += piece.len() - usize::from(ends);
            if in_line > limits.max_line {
                return Err(InputError::LineTooLong {
                    name: name.to_string(),
                    line,
                    limit: limits.max_line,
                });
            }
            if ends {
                line += 1;
                in_line = 0;
            }
        }
        out.extend_from_slice(chunk);
        let n = chunk.len();
        r.consume(n);
    }
    String::from_utf8(out).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..offset]
            .iter()
            .filter(|b| **b == b'\n')
            .count();
        InputError::NotText {
            name: name.to_string(),
            line,
            offset,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: TextLimits = TextLimits {
        max_bytes: 1000,
        max_line: 10,
    };

    /// A reader of `n` zero bytes that counts what was taken from it.
    struct Zeros {
        left: u64,
        taken: std::rc::Rc<std::cell::Cell<u64>>,
    }

    impl Read for Zeros {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = (buf.len() as u64).min(self.left) as usize;
            buf[..n].fill(0);
            self.left -= n as u64;
            self.taken.set(self.taken.get() + n as u64);
            Ok(n)
        }
    }

    fn zeros(n: u64) -> (Zeros, std::rc::Rc<std::cell::Cell<u64>>) {
        let taken = std::rc::Rc::new(std::cell::Cell::new(0));
        (
            Zeros {
                left: n,
                taken: taken.clone(),
            },
            taken,
        )
    }

    #[test]
    fn bytes_within_the_limit_are_read_whole() {
        assert_eq!(read_bytes(&b"secret"[..], "k", 6).unwrap(), b"secret");
        let e = read_bytes(&b"secret!"[..], "k", 6).unwrap_err();
        assert_eq!(
            e.to_string(),
            "k: more than 6 bytes, the most netceil reads from it"
        );
    }

    #[test]
    fn an_endless_source_is_refused_after_a_bounded_read() {
        let (z, taken) = zeros(u64::MAX);
        let e = read_bytes(z, "/dev/zero", 4096).unwrap_err();
        assert!(matches!(e, InputError::TooLarge { limit: 4096, .. }), "{e}");
        assert_eq!(taken.get(), 4097);
        let (z, taken) = zeros(u64::MAX);
        let e = read_text(
            z,
            "-",
            TextLimits {
                max_bytes: 1 << 30,
                max_line: 1 << 20,
            },
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "-:1: line longer than 1 MiB (1048576 bytes), the longest line netceil reads"
        );
        assert!(taken.get() <= (1 << 20) + CHUNK as u64, "{}", taken.get());
    }

    #[test]
    fn long_lines_are_refused_with_their_number() {
        assert_eq!(
            read_text(&b"0123456789\nab\n"[..], "f", SMALL).unwrap(),
            "0123456789\nab\n"
        );
        // The newline is not part of the line; a last line without one still counts.
        assert!(read_text(&b"a\n0123456789"[..], "f", SMALL).is_ok());
        let e = read_text(&b"a\nb\n0123456789x\n"[..], "log.txt", SMALL).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("log.txt:3: line longer than 10 bytes,"),
            "{e}"
        );
        // Lines split across reads are measured whole.
        let long = format!("{}\n{}", "x".repeat(5), "y".repeat(CHUNK + 5));
        let limits = TextLimits {
            max_bytes: 1 << 20,
            max_line: CHUNK,
        };
        let e = read_text(long.as_bytes(), "f", limits).unwrap_err();
        assert!(matches!(e, InputError::LineTooLong { line: 2, .. }), "{e}");
    }

    #[test]
    fn too_much_text_and_bad_text_are_named() {
        let many = "short\n".repeat(200);
        let e = read_text(many.as_bytes(), "f", SMALL).unwrap_err();
        assert!(matches!(e, InputError::TooLarge { limit: 1000, .. }), "{e}");
        let e = read_text(&b"ok\nok\nbad \xff here\n"[..], "f", SMALL).unwrap_err();
        assert_eq!(
            e.to_string(),
            "f:3: not text (invalid UTF-8 at byte 10 of the file)"
        );
    }
}
