//! An HTTP/1.x request head, parsed from bytes under explicit limits.
//!
//! [`parse_request`] is a pure function over what has arrived so far: it says "not yet" while a
//! head may still come within the limits, and refuses as soon as the bytes already break one
//! (a request line that has passed its limit without a line end is refused there, not when
//! the line finally ends). The syntax itself is checked by `httparse`.

use std::fmt;

/// What a request head may take. Every limit holds on partial input too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLimits {
    /// Bytes of the request line (`GET /metrics HTTP/1.1`), without its line end.
    pub request_line: usize,
    /// Header fields.
    pub header_count: usize,
    /// Bytes of all header lines together, line ends included.
    pub header_bytes: usize,
    /// Bytes of the whole head: request line, headers and the empty line that ends them.
    pub total: usize,
}

impl Default for RequestLimits {
    /// Room for any scraper or browser asking for a page: Prometheus sends 5 headers in
    /// about 250 bytes.
    fn default() -> RequestLimits {
        RequestLimits {
            request_line: 2048,
            header_count: 32,
            header_bytes: 6144,
            total: 8192,
        }
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestError {
    RequestLineTooLong {
        limit: usize,
    },
    TooManyHeaders {
        limit: usize,
    },
    HeadersTooLarge {
        limit: usize,
    },
    TooLarge {
        limit: usize,
    },
    /// Not an HTTP/1.0 or 1.1 request head; says what was wrong.
    Malformed(&'static str),
    /// The request announces a body (these endpoints take none).
    Body,
}

impl RequestError {
    /// The status code that answers it.
    pub fn status(&self) -> u16 {
        match self {
            RequestError::RequestLineTooLong { .. } => 414,
            RequestError::TooManyHeaders { .. }
            | RequestError::HeadersTooLarge { .. }
            | RequestError::TooLarge { .. } => 431,
            RequestError::Malformed(_) => 400,
            RequestError::Body => 413,
        }
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::RequestLineTooLong { limit } => {
                write!(f, "request line longer than {limit} bytes")
            }
            RequestError::TooManyHeaders { limit } => write!(f, "more than {limit} header fields"),
            RequestError::HeadersTooLarge { limit } => {
                write!(f, "header fields longer than {limit} bytes in all")
            }
            RequestError::TooLarge { limit } => write!(f, "request head longer than {limit} bytes"),
            RequestError::Malformed(what) => write!(f, "not an HTTP/1.x request: {what}"),
            RequestError::Body => write!(f, "a request body (none is accepted)"),
        }
    }
}

impl std::error::Error for RequestError {}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    /// Any other token (`POST`, `OPTIONS`…).
    Other(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
}

/// A request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: Method,
    /// The target's path (`/metrics`), without the query.
    pub path: String,
    /// What followed `?`, if anything did.
    pub query: Option<String>,
    pub version: Version,
    /// Names and values as sent (values not UTF-8 are read lossily).
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// The first value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the client wants the connection kept for another request: HTTP/1.1 unless it
    /// says `Connection: close`, HTTP/1.0 only when it says `Connection: keep-alive`.
    pub fn keep_alive(&self) -> bool {
        let has = |token: &str| {
            self.headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case("connection"))
                .flat_map(|(_, v)| v.split(','))
                .any(|t| t.trim().eq_ignore_ascii_case(token))
        };
        match self.version {
            Version::Http11 => !has("close"),
            Version::Http10 => has("keep-alive"),
        }
    }
}

/// A complete request head and how many bytes of the input it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub request: Request,
    pub consumed: usize,
}

/// Where the head ends in `buf`, if it does, after checking every limit on the lines so far.
fn scan(buf: &[u8], limits: &RequestLimits) -> Result<Option<usize>, RequestError> {
    // Empty lines before the request line are tolerated (RFC 9112, 2.2); they count in `total`.
    let start = buf
        .iter()
        .position(|&b| b != b'\r' && b != b'\n')
        .unwrap_or(buf.len());
    let mut at = start;
    let mut headers = 0usize;
    let mut header_bytes = 0usize;
    let mut first = true;
    loop {
        let line_end = buf[at..].iter().position(|&b| b == b'\n');
        let line_len = line_end.map_or(buf.len() - at, |i| i + 1);
        let content = buf[at..at + line_len]
            .strip_suffix(b"\n")
            .map_or(&buf[at..at + line_len], |l| {
                l.strip_suffix(b"\r").unwrap_or(l)
            });
        if first {
            if content.len() > limits.request_line {
                return Err(RequestError::RequestLineTooLong {
                    limit: limits.request_line,
                });
            }
        } else if line_end.is_some() && content.is_empty() {
            let end = at + line_len;
            return if end > limits.total {
                Err(RequestError::TooLarge {
                    limit: limits.total,
                })
            } else {
                Ok(Some(end))
            };
        } else {
            headers += 1;
            header_bytes += line_len;
            if headers > limits.header_count {
                return Err(RequestError::TooManyHeaders {
                    limit: limits.header_count,
                });
            }
            if header_bytes > limits.header_bytes {
                return Err(RequestError::HeadersTooLarge {
                    limit: limits.header_bytes,
                });
            }
        }
        if at + line_len > limits.total {
            return Err(RequestError::TooLarge {
                limit: limits.total,
            });
        }
        if line_end.is_none() {
            return Ok(None);
        }
        at += line_len;
        first = false;
    }
}

fn malformed(e: httparse::Error) -> RequestError {
    RequestError::Malformed(match e {
        httparse::Error::HeaderName => "invalid header name",
        httparse::Error::HeaderValue => "invalid header value",
        httparse::Error::NewLine => "invalid line end",
        httparse::Error::Status => "invalid status",
        httparse::Error::Token => "invalid method or target",
        httparse::Error::TooManyHeaders => "too many headers",
        httparse::Error::Version => "not HTTP/1.0 or HTTP/1.1",
    })
}

/// Parses the request head at the start of `buf` (bytes read from a connection so far).
///
/// `Ok(None)`: not complete yet, and nothing so far breaks a limit or the syntax: read more.
/// `Ok(Some(parsed))`: a whole head, `parsed.consumed` bytes long; anything after it is the
/// next request (pipelining). `Err`: refuse it; reading more would not help.
pub fn parse_request(buf: &[u8], limits: &RequestLimits) -> Result<Option<Parsed>, RequestError> {
    let end = scan(buf, limits)?;
    let mut fields = vec![httparse::EMPTY_HEADER; limits.header_count];
    let mut req = httparse::Request::new(&mut fields);
    let status = req
        .parse(&buf[..end.unwrap_or(buf.len())])
        .map_err(malformed)?;
    let consumed = match (status, end) {
        (httparse::Status::Complete(n), Some(end)) if n == end => n,
        (httparse::Status::Partial, None) => return Ok(None),
        // Where our line scan and httparse disagree on the end, the bytes are not plain HTTP
        // (a lone CR, say).
        _ => return Err(RequestError::Malformed("ambiguous end of the head")),
    };
    let (Some(method), Some(target), Some(version)) = (req.method, req.path, req.version) else {
        return Err(RequestError::Malformed("incomplete request line"));
    };
    let method = match method {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        other => Method::Other(other.to_string()),
    };
    let version = match version {
        0 => Version::Http10,
        _ => Version::Http11,
    };
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_string(), Some(q.to_string())),
        None => (target.to_string(), None),
    };
    let headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_string(),
                String::from_utf8_lossy(h.value).trim().to_string(),
            )
        })
        .collect();
    for (name, value) in &headers {
        if name.eq_ignore_ascii_case("transfer-encoding")
            || (name.eq_ignore_ascii_case("content-length") && value != "0")
        {
            return Err(RequestError::Body);
        }
    }
    Ok(Some(Parsed {
        request: Request {
            method,
            path,
            query,
            version,
            headers,
        },
        consumed,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &[u8]) -> Result<Option<Parsed>, RequestError> {
        parse_request(text, &RequestLimits::default())
    }

    #[test]
    fn a_scrapers_request() {
        let text = b"GET /metrics?x=1 HTTP/1.1\r\nHost: h:9870\r\nAccept: application/openmetrics-text;version=1.0.0\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\nGET /";
        let p = parse(text).unwrap().unwrap();
        assert_eq!(p.consumed, text.len() - "GET /".len());
        assert_eq!(p.request.method, Method::Get);
        assert_eq!(p.request.path, "/metrics");
        assert_eq!(p.request.query.as_deref(), Some("x=1"));
        assert_eq!(p.request.version, Version::Http11);
        assert!(p.request.header("ACCEPT").unwrap().contains("openmetrics"));
        assert!(p.request.keep_alive());
        // The pipelined rest is a head in the making.
        assert_eq!(parse(&text[p.consumed..]), Ok(None));
    }

    #[test]
    fn connections_kept_or_not() {
        let ka = |t: &[u8]| parse(t).unwrap().unwrap().request.keep_alive();
        assert!(!ka(b"GET / HTTP/1.0\r\n\r\n"));
        assert!(ka(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
        assert!(!ka(b"GET / HTTP/1.1\r\nConnection: TE, close\r\n\r\n"));
        assert!(ka(b"HEAD / HTTP/1.1\n\n"), "bare line feeds are accepted");
    }

    #[test]
    fn incomplete_heads_wait_for_more() {
        let text = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
        for n in 0..text.len() {
            assert_eq!(parse(&text[..n]), Ok(None), "{n} bytes");
        }
        assert_eq!(parse(b"\r\n\r\n"), Ok(None), "empty lines before a request");
    }

    #[test]
    fn each_limit_is_enforced_before_the_line_ends() {
        let l = RequestLimits::default();
        let long_target = format!("GET /{} HTTP/1.1", "a".repeat(l.request_line));
        assert_eq!(
            parse(long_target.as_bytes()),
            Err(RequestError::RequestLineTooLong {
                limit: l.request_line
            })
        );
        // Exactly at the limit is fine.
        let at_limit = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(l.request_line - 14));
        assert!(parse(at_limit.as_bytes()).unwrap().is_some());

        let long_header = format!("GET / HTTP/1.1\r\nX-Junk: {}", "a".repeat(l.header_bytes));
        assert_eq!(
            parse(long_header.as_bytes()),
            Err(RequestError::HeadersTooLarge {
                limit: l.header_bytes
            })
        );
        let many = format!(
            "GET / HTTP/1.1\r\n{}",
            "A: b\r\n".repeat(l.header_count + 1)
        );
        assert_eq!(
            parse(many.as_bytes()),
            Err(RequestError::TooManyHeaders {
                limit: l.header_count
            })
        );
        let blank_flood = vec![b'\n'; l.total + 1];
        assert_eq!(
            parse(&blank_flood),
            Err(RequestError::TooLarge { limit: l.total })
        );
        let tight = RequestLimits { total: 40, ..l };
        assert_eq!(
            parse_request(b"GET / HTTP/1.1\r\nHost: abcdefghijklmnop\r\n\r\n", &tight),
            Err(RequestError::TooLarge { limit: 40 })
        );
    }

    #[test]
    fn what_is_not_a_bodiless_http_1_request_is_refused() {
        for (text, status) in [
            (&b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"[..], 400),
            (b"GET / HTTP/2.0\r\n\r\n", 400),
            (b"GET / SPDY/3\r\n\r\n", 400),
            (b"GET\x00/ HTTP/1.1\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", 413),
            (
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
                413,
            ),
        ] {
            let e = parse(text).expect_err(&String::from_utf8_lossy(text));
            assert_eq!(
                e.status(),
                status,
                "{e} for {:?}",
                String::from_utf8_lossy(text)
            );
        }
        let other = parse(b"OPTIONS * HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(other.request.method, Method::Other("OPTIONS".into()));
    }

    /// The inputs the fuzz target (`fuzz/fuzz_targets/metrics_request.rs`) starts from, and
    /// the properties it checks, run here on every test run.
    #[test]
    fn nasty_inputs_never_panic_and_stay_in_bounds() {
        let mut corpus: Vec<Vec<u8>> = vec![
            Vec::new(),
            b"\r".to_vec(),
            b"\r\n\r\n\r\n".to_vec(),
            b"GET".to_vec(),
            b"GET / HTTP/1.1\r\n\r".to_vec(),
            b"GET / HTTP/1.1\r\r\n\r\n".to_vec(),
            b"GET / HTTP/1.1\n\r\n".to_vec(),
            b"GET / HTTP/1.1\r\nA:\r\n\r\n".to_vec(),
            b"GET / HTTP/1.1\r\n:\r\n\r\n".to_vec(),
            b"GET / HTTP/1.1\r\nA: \xff\xfe\r\n\r\n".to_vec(),
            b"GET / HTTP/1.1\r\n A: folded\r\n\r\n".to_vec(),
            b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n".to_vec(),
            b"GET http://x/metrics HTTP/1.1\r\n\r\n".to_vec(),
            b"G\xc3\xa9T / HTTP/1.1\r\n\r\n".to_vec(),
            vec![0; 10_000],
            vec![b'a'; 1 << 20],
        ];
        corpus.push(format!("GET / HTTP/1.1\r\n{}\r\n", "A: b\r\n".repeat(32)).into_bytes());
        let limits = RequestLimits::default();
        for input in &corpus {
            check_invariants(input, &limits);
            for cut in [1, 2, 17, input.len() / 2] {
                check_invariants(&input[..cut.min(input.len())], &limits);
            }
        }
    }

    /// What must hold for any input (also asserted by the fuzz target).
    fn check_invariants(input: &[u8], limits: &RequestLimits) {
        match parse_request(input, limits) {
            Ok(Some(p)) => {
                assert!(p.consumed <= input.len().min(limits.total));
                assert!(p.request.headers.len() <= limits.header_count);
                // The same head with anything after it parses the same.
                let mut more = input[..p.consumed].to_vec();
                more.extend_from_slice(b"GET / HTTP/1.1\r\n");
                assert_eq!(parse_request(&more, limits), Ok(Some(p)));
            }
            Ok(None) => assert!(input.len() <= limits.total),
            Err(e) => assert!([400, 413, 414, 431].contains(&e.status())),
        }
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_keep_the_invariants(input in proptest::collection::vec(proptest::num::u8::ANY, 0..600)) {
            check_invariants(&input, &RequestLimits { request_line: 64, header_count: 4, header_bytes: 128, total: 256 });
        }

        #[test]
        fn heads_with_any_fields_parse(names in proptest::collection::vec("[A-Za-z][A-Za-z0-9-]{0,12}", 0..8), value in "[ -~]{0,40}") {
            let mut text = String::from("GET /metrics HTTP/1.1\r\n");
            for n in &names {
                if n.eq_ignore_ascii_case("content-length") || n.eq_ignore_ascii_case("transfer-encoding") {
                    continue;
                }
                text.push_str(&format!("{n}: {value}\r\n"));
            }
            text.push_str("\r\n");
            let p = parse(text.as_bytes()).unwrap().unwrap();
            proptest::prop_assert_eq!(p.consumed, text.len());
            proptest::prop_assert_eq!(p.request.path, "/metrics");
        }
    }
}
