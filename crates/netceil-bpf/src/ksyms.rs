//! Kernel symbols from /proc/kallsyms: an address to `function+0xoffset`.
//!
//! Text symbols (types `t`/`T`, and module symbols) name stack frames; the lock text section
//! (`__lock_text_start`..`__lock_text_end`), where the kernel's lock entry points live, lets a
//! stack be read past the locking code to the function that wanted the lock.

use std::fmt;

/// A parse error: the line and what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KsymsError {
    pub line: usize,
    pub what: String,
}

impl fmt::Display for KsymsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.what)
    }
}

impl std::error::Error for KsymsError {}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Sym {
    addr: u64,
    name: String,
    module: Option<String>,
}

/// The kernel's symbol table, sorted by address.
#[derive(Debug, Clone, Default)]
pub struct Ksyms {
    syms: Vec<Sym>,
    /// Data symbols (`d`/`D`/`b`/`B`): static variables, where a static lock has its name.
    data: Vec<Sym>,
    lock_text: Option<(u64, u64)>,
    /// All addresses were 0: the reader may not see kernel addresses (kptr_restrict).
    pub hidden: bool,
}

impl Ksyms {
    /// Parses the text of /proc/kallsyms: `ADDR TYPE NAME [MODULE]` per line.
    pub fn parse(text: &str) -> Result<Ksyms, KsymsError> {
        let mut syms = Vec::new();
        let mut data = Vec::new();
        let mut lock_start = None;
        let mut lock_end = None;
        let mut nonzero = false;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let err = |what: &str| KsymsError {
                line: i + 1,
                what: format!("{what}, expected `ADDRESS TYPE NAME [MODULE]`: {line:?}"),
            };
            let mut it = line.split_whitespace();
            let (Some(a), Some(ty), Some(name)) = (it.next(), it.next(), it.next()) else {
                return Err(err("too few fields"));
            };
            let addr = u64::from_str_radix(a, 16).map_err(|_| err("the address is not hex"))?;
            if ty.len() != 1 {
                return Err(err("the type is not one letter"));
            }
            let module = it
                .next()
                .map(|m| m.trim_start_matches('[').trim_end_matches(']').to_string());
            nonzero |= addr != 0;
            match name {
                "__lock_text_start" => lock_start = Some(addr),
                "__lock_text_end" => lock_end = Some(addr),
                _ => {}
            }
            if matches!(ty, "d" | "D" | "b" | "B") {
                data.push(Sym {
                    addr,
                    name: name.to_string(),
                    module: module.clone(),
                });
            } else if matches!(ty, "t" | "T" | "w" | "W") || module.is_some() {
                syms.push(Sym {
                    addr,
                    name: name.to_string(),
                    module,
                });
            }
        }
        syms.sort_by_key(|s| s.addr);
        data.sort_by_key(|s| s.addr);
        Ok(Ksyms {
            data,
            hidden: !nonzero && !syms.is_empty(),
            syms,
            lock_text: lock_start.zip(lock_end),
        })
    }

    /// Reads the live /proc/kallsyms.
    pub fn load() -> Result<Ksyms, String> {
        let text = std::fs::read_to_string("/proc/kallsyms")
            .map_err(|e| format!("/proc/kallsyms: {e}"))?;
        Ksyms::parse(&text).map_err(|e| format!("/proc/kallsyms: {e}"))
    }

    fn find(&self, addr: u64) -> Option<&Sym> {
        if self.hidden {
            return None;
        }
        let i = self.syms.partition_point(|s| s.addr <= addr);
        (i > 0).then(|| &self.syms[i - 1])
    }

    /// The function an address lies in, without offset.
    pub fn function(&self, addr: u64) -> Option<&str> {
        self.find(addr).map(|s| s.name.as_str())
    }

    /// `function+0xoff [module]`, or the bare address when no symbol covers it.
    pub fn describe(&self, addr: u64) -> String {
        match self.find(addr) {
            Some(s) => {
                let m = s
                    .module
                    .as_ref()
                    .map(|m| format!(" [{m}]"))
                    .unwrap_or_default();
                format!("{}+{:#x}{m}", s.name, addr - s.addr)
            }
            None => format!("{addr:#x}"),
        }
    }

    /// The static variable an address lies in (`name` or `name+0xoff`), if it is within
    /// 64 KiB after a data symbol: locks inside static structures. Heap addresses are far from
    /// any and get `None`.
    pub fn data_symbol(&self, addr: u64) -> Option<String> {
        if self.hidden {
            return None;
        }
        let i = self.data.partition_point(|s| s.addr <= addr);
        let s = self.data.get(i.checked_sub(1)?)?;
        let off = addr - s.addr;
        (off < 0x10000).then(|| {
            if off == 0 {
                s.name.clone()
            } else {
                format!("{}+{off:#x}", s.name)
            }
        })
    }

    /// True for the frames of the locking and tracing machinery itself: the lock text section,
    /// the lock slow paths, and the tracepoint and BPF frames above them.
    pub fn is_machinery(&self, addr: u64) -> bool {
        if let Some((a, b)) = self.lock_text {
            if (a..b).contains(&addr) {
                return true;
            }
        }
        let Some(f) = self.function(addr) else {
            return false;
        };
        const PREFIXES: &[&str] = &[
            "bpf_",
            "__bpf",
            "__traceiter_",
            "trace_",
            "__trace_",
            "native_queued_spin_lock",
            "__pv_queued_spin_lock",
            "pv_queued_spin_lock",
            // The runqueue lock's wrappers: the caller is the scheduler function above them.
            "raw_spin_rq_lock",
            "_raw_spin_rq_lock",
            "__task_rq_lock",
            "task_rq_lock",
            "double_rq_lock",
            "_double_lock_balance",
            "queued_spin_lock",
            "queued_read_lock",
            "queued_write_lock",
            "do_raw_spin_lock",
            "do_raw_read_lock",
            "do_raw_write_lock",
            "_raw_spin_",
            "_raw_read_",
            "_raw_write_",
            "__mutex_lock",
            "mutex_lock",
            "__rt_mutex",
            "rt_mutex",
            "rt_spin_lock",
            "__rwsem",
            "rwsem_",
            "down_read",
            "down_write",
            "percpu_down_",
            "__percpu_down_",
            "osq_lock",
        ];
        PREFIXES.iter().any(|p| f.starts_with(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
ffffffff81000000 T _stext
ffffffff81100000 T __wake_up_sync_key
ffffffff81100400 t __wake_up_common_lock
ffffffff81200000 T __lock_text_start
ffffffff81200010 T _raw_spin_lock_irqsave
ffffffff81200400 T __lock_text_end
ffffffff81300000 T native_queued_spin_lock_slowpath
ffffffff82000000 D some_data
ffffffffc0000000 t veth_xmit\t[veth]
";

    #[test]
    fn addresses_resolve_to_function_and_offset() {
        let k = Ksyms::parse(TEXT).unwrap();
        assert_eq!(k.describe(0xffffffff81100010), "__wake_up_sync_key+0x10");
        assert_eq!(k.describe(0xffffffffc0000008), "veth_xmit+0x8 [veth]");
        assert_eq!(
            k.function(0xffffffff81100400),
            Some("__wake_up_common_lock")
        );
        assert_eq!(k.describe(0x10), "0x10");
        assert_eq!(
            k.data_symbol(0xffffffff82000000).as_deref(),
            Some("some_data")
        );
        assert_eq!(
            k.data_symbol(0xffffffff82000040).as_deref(),
            Some("some_data+0x40")
        );
        assert_eq!(k.data_symbol(0xffff888000001000), None);
    }

    #[test]
    fn lock_text_and_slow_paths_are_machinery_callers_are_not() {
        let k = Ksyms::parse(TEXT).unwrap();
        assert!(k.is_machinery(0xffffffff81200020));
        assert!(k.is_machinery(0xffffffff81300010));
        assert!(!k.is_machinery(0xffffffff81100010));
    }

    #[test]
    fn hidden_addresses_give_no_names() {
        let k = Ksyms::parse("0000000000000000 T a\n0000000000000000 T b\n").unwrap();
        assert!(k.hidden);
        assert_eq!(k.describe(0), "0x0");
    }

    #[test]
    fn malformed_lines_name_the_line_and_the_expectation() {
        let e = Ksyms::parse("ffffffff81000000 T a\nzz T b\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("not hex"), "{e}");
        let e = Ksyms::parse("ffffffff81000000 T\n").unwrap_err();
        assert!(e.to_string().contains("too few fields"), "{e}");
        let e = Ksyms::parse("ffffffff81000000 TT a\n").unwrap_err();
        assert!(e.to_string().contains("one letter"), "{e}");
    }
}
