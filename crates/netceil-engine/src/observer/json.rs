//! The JSON stream: what a session measures, one JSON object per line (JSON Lines), each
//! line flushed as it is written, so that `netceil run … --stream - | jq` follows it live.
//!
//! Every line has a `type`: `begin` (a trial starts), `progress` (one interval of it), `end`,
//! `step` and `say` (a planner's lines), `close` (nothing more comes). A watch, which runs no
//! trial, writes a `progress` line per sampled row instead, with no load figures.
//!
//! A write that fails (the reader closed the pipe) ends the stream: nothing more is written,
//! and the session goes on; the run is kept as without the stream. The user is told once, on
//! stderr, and the run's notes say so (see [`Observer::note`]).

use netceil_model::names as n;
use netceil_probe::Row;
use serde::Serialize;
use std::io::Write;

use super::{LoadFigures, LoadKind, Observer, PartStart};

/// The machine's figures of one interval that say where a ceiling is: `None` where the row
/// does not have them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MachineFigures {
    /// All CPUs, % busy.
    pub cpu_busy_pct: Option<f64>,
    pub cpu_system_pct: Option<f64>,
    pub cpu_softirq_pct: Option<f64>,
    /// The busiest CPU and how busy it was, %.
    pub busiest_cpu: Option<u32>,
    pub busiest_cpu_pct: Option<f64>,
    /// Packets the kernel dropped at the backlog, and datagrams at full sockets, per second.
    pub softnet_dropped_per_s: Option<f64>,
    pub udp_rcvbuf_errors_per_s: Option<f64>,
    pub tcp_retrans_segs_per_s: Option<f64>,
}

impl MachineFigures {
    pub fn of(row: &Row) -> MachineFigures {
        let busiest = row
            .by_name(n::CPU_BUSY_PCT)
            .filter_map(|(id, _, v)| Some((id.label(n::LABEL_CPU)?.parse::<u32>().ok()?, v)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        MachineFigures {
            cpu_busy_pct: row.total(n::CPU_BUSY_PCT),
            cpu_system_pct: row.total(n::CPU_SYSTEM_PCT),
            cpu_softirq_pct: row.total(n::CPU_SOFTIRQ_PCT),
            busiest_cpu: busiest.map(|b| b.0),
            busiest_cpu_pct: busiest.map(|b| b.1),
            softnet_dropped_per_s: row.total(n::SOFTNET_DROPPED_PER_S),
            udp_rcvbuf_errors_per_s: row.total(n::UDP_RCVBUF_ERRORS_PER_S),
            tcp_retrans_segs_per_s: row.total(n::TCP_RETRANS_SEGS_PER_S),
        }
    }
}

/// One line of the stream.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamLine<'a> {
    /// A trial starts: what runs, which figures it reports, how long it is planned to run.
    Begin {
        title: &'a str,
        kind: LoadKind,
        planned_s: f64,
    },
    /// One interval: seconds since the trial began (since the watch began, for a watch), the
    /// machine's figures and the workload's (none for a watch).
    Progress {
        elapsed_s: f64,
        machine: MachineFigures,
        #[serde(skip_serializing_if = "Option::is_none")]
        load: Option<&'a LoadFigures>,
    },
    /// The trial ended.
    End,
    /// A planner's step done, in words.
    Step { line: &'a str },
    /// A planner's line that is no step.
    Say { line: &'a str },
    /// Nothing more comes.
    Close,
}

/// An [`Observer`] writing [`StreamLine`]s to `W`.
pub struct JsonStream<W: Write> {
    out: Option<W>,
    /// A watch's rows become progress lines (a session's rows are its progress lines' rows).
    rows_as_progress: bool,
    /// Why the stream ended early.
    failed: Option<std::io::Error>,
    /// What the stream is, for the user: `--stream -` or `--stream FILE`.
    name: String,
    /// How the user is told the stream ended early (stderr).
    tell: fn(&str),
}

fn to_stderr(line: &str) {
    eprintln!("netceil: {line}");
}

impl<W: Write> JsonStream<W> {
    /// The stream of a session's trials.
    pub fn new(out: W) -> JsonStream<W> {
        JsonStream {
            out: Some(out),
            rows_as_progress: false,
            failed: None,
            name: "the JSON stream".into(),
            tell: to_stderr,
        }
    }

    /// Names the stream in what the user is told (`--stream -`, `--stream run.jsonl`).
    pub fn named(self, name: impl Into<String>) -> JsonStream<W> {
        JsonStream {
            name: name.into(),
            ..self
        }
    }

    /// The stream of a watch: a progress line per row sampled.
    pub fn watching(out: W) -> JsonStream<W> {
        JsonStream {
            rows_as_progress: true,
            ..JsonStream::new(out)
        }
    }

    /// Writes one line and flushes it; the first failure ends the stream.
    pub fn write(&mut self, line: &StreamLine) {
        let Some(out) = self.out.as_mut() else {
            return;
        };
        let written = serde_json::to_writer(&mut *out, line)
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        if let Err(e) = written {
            self.failed = Some(e);
            self.out = None;
            if let Some(n) = self.note() {
                (self.tell)(&n);
            }
        }
    }

    /// Why the stream stopped before its end, if it did.
    pub fn failed(&self) -> Option<&std::io::Error> {
        self.failed.as_ref()
    }

    /// What the user is told when the stream stopped before its end, also kept in the
    /// run's notes; `None` while it is whole.
    pub fn note(&self) -> Option<String> {
        let e = self.failed.as_ref()?;
        let why = if e.kind() == std::io::ErrorKind::BrokenPipe {
            "its reader went away".to_string()
        } else {
            format!("a write failed: {e}")
        };
        Some(format!(
            "{} stopped early: {why}; nothing more was streamed, but the run itself went on and is kept as without the stream",
            self.name
        ))
    }
}

impl<W: Write> Observer for JsonStream<W> {
    fn begin(&mut self, part: &PartStart) {
        self.write(&StreamLine::Begin {
            title: &part.title,
            kind: part.kind,
            planned_s: part.length.as_secs_f64(),
        });
    }

    fn progress(&mut self, elapsed_s: f64, row: &Row, load: &LoadFigures) {
        self.write(&StreamLine::Progress {
            elapsed_s,
            machine: MachineFigures::of(row),
            load: Some(load),
        });
    }

    fn end(&mut self) {
        self.write(&StreamLine::End);
    }

    fn rows(&mut self, rows: &[Row]) {
        if !self.rows_as_progress {
            return;
        }
        for row in rows {
            self.write(&StreamLine::Progress {
                elapsed_s: row.t_s,
                machine: MachineFigures::of(row),
                load: None,
            });
        }
    }

    fn step(&mut self, line: &str) {
        self.write(&StreamLine::Step { line });
    }

    fn say(&mut self, line: &str) {
        self.write(&StreamLine::Say { line });
    }

    fn close(&mut self) {
        self.write(&StreamLine::Close);
    }

    fn note(&self) -> Option<String> {
        JsonStream::note(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netceil_model::{MetricId, Unit};
    use serde_json::Value;
    use std::time::Duration;

    fn row() -> Row {
        Row::from_values(
            1.0,
            1.0,
            vec![
                (MetricId::new(n::CPU_BUSY_PCT), Unit::Percent, 40.0),
                (
                    MetricId::new(n::CPU_BUSY_PCT).with(n::LABEL_CPU, "0"),
                    Unit::Percent,
                    20.0,
                ),
                (
                    MetricId::new(n::CPU_BUSY_PCT).with(n::LABEL_CPU, "1"),
                    Unit::Percent,
                    97.0,
                ),
            ],
        )
    }

    fn lines(bytes: &[u8]) -> Vec<Value> {
        std::str::from_utf8(bytes)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn each_event_is_one_typed_json_line() {
        let mut buf = Vec::new();
        {
            let mut s = JsonStream::new(&mut buf);
            s.begin(&PartStart {
                title: "udp 18 B payload (64 B frame)".into(),
                length: Duration::from_secs(2),
                kind: LoadKind::Udp,
            });
            let load = LoadFigures {
                tx_pps: Some(1000.0),
                lost: Some(3),
                ..Default::default()
            };
            s.progress(1.0, &row(), &load);
            // A session's rows are its progress lines' rows: not written twice.
            s.rows(&[row()]);
            s.end();
            s.step("64 B: 1.2 Mpps");
            s.say("next: 128 B");
            s.close();
        }
        let l = lines(&buf);
        let types: Vec<&str> = l.iter().map(|v| v["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["begin", "progress", "end", "step", "say", "close"]);
        assert_eq!(l[0]["kind"], "udp");
        assert_eq!(l[0]["planned_s"], 2.0);
        assert_eq!(l[0]["title"], "udp 18 B payload (64 B frame)");
        assert_eq!(l[1]["elapsed_s"], 1.0);
        assert_eq!(l[1]["load"]["tx_pps"], 1000.0);
        assert_eq!(l[1]["load"]["lost"], 3);
        assert_eq!(l[1]["machine"]["cpu_busy_pct"], 40.0);
        assert_eq!(l[1]["machine"]["busiest_cpu"], 1);
        assert_eq!(l[1]["machine"]["busiest_cpu_pct"], 97.0);
        assert_eq!(l[3]["line"], "64 B: 1.2 Mpps");
    }

    #[test]
    fn a_watch_streams_its_rows() {
        let mut buf = Vec::new();
        let mut s = JsonStream::watching(&mut buf);
        s.rows(&[row(), row()]);
        s.close();
        let l = lines(&buf);
        assert_eq!(l.len(), 3);
        assert_eq!(l[0]["type"], "progress");
        assert!(l[0].get("load").is_none());
    }

    /// A reader that goes away after `room` bytes, as a closed pipe does.
    struct Closing {
        room: usize,
        written: Vec<u8>,
    }

    impl Write for Closing {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.written.len() + b.len() > self.room {
                return Err(std::io::ErrorKind::BrokenPipe.into());
            }
            self.written.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_reader_ends_the_stream_quietly() {
        let mut s = JsonStream::new(Closing {
            room: 40,
            written: Vec::new(),
        });
        s.step("short");
        assert!(s.failed().is_none());
        s.step("a line too long for what is left of the reader's room");
        assert_eq!(
            s.failed().map(|e| e.kind()),
            Some(std::io::ErrorKind::BrokenPipe)
        );
        // Nothing more is tried, and nothing panics.
        s.close();
        assert!(s.out.is_none());
    }

    thread_local! {
        static TOLD: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    #[test]
    fn a_stream_whose_writer_fails_tells_the_user_once_and_leaves_a_note() {
        let mut s = JsonStream::watching(Closing {
            room: 0,
            written: Vec::new(),
        })
        .named("--stream -");
        s.tell = |line| TOLD.with(|t| t.borrow_mut().push(line.to_string()));
        assert!(Observer::note(&s).is_none());
        s.rows(&[row(), row()]);
        s.step("more");
        s.close();
        let told = TOLD.with(|t| t.borrow().clone());
        assert_eq!(told.len(), 1, "{told:?}");
        let note = Observer::note(&s).expect("a note");
        assert_eq!(told[0], note);
        assert!(note.contains("--stream -"), "{note}");
        assert!(note.contains("reader went away"), "{note}");
        assert!(note.contains("run itself went on"), "{note}");

        // Another failure than a closed pipe says what it was.
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::from_raw_os_error(28))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut s = JsonStream::new(Full).named("--stream run.jsonl");
        s.tell = |_| {};
        s.close();
        let note = s.note().unwrap();
        assert!(note.contains("--stream run.jsonl"), "{note}");
        assert!(note.contains("No space left"), "{note}");
    }
}
