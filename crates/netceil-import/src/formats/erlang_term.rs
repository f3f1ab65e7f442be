//! Reading Erlang (and Elixir) shell output: lists, tuples, numbers, atoms and strings, with
//! shell prompts and `%` comments removed. Only what scheduler statistics print is needed, so
//! maps, binaries, pids and funs are read as opaque atoms rather than understood.
//!
//! Shared by the Erlang readers (`erlang_wall_time`, `recon`, `recon_node_stats`).

/// An Erlang term, as far as the scheduler readers need one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Term {
    Int(i128),
    Float(f64),
    /// An atom (`total`, `:normal` without the colon) or any other bare word.
    Atom(String),
    /// A string or charlist (`"1.0%"`, `'0.0%'`).
    Str(String),
    List(Vec<Term>),
    Tuple(Vec<Term>),
}

impl Term {
    /// The value of an integer term.
    pub(crate) fn int(&self) -> Option<i128> {
        match self {
            Term::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The value of a number term.
    pub(crate) fn num(&self) -> Option<f64> {
        match self {
            Term::Int(i) => Some(*i as f64),
            Term::Float(f) => Some(*f),
            _ => None,
        }
    }

    pub(crate) fn atom(&self) -> Option<&str> {
        match self {
            Term::Atom(a) => Some(a),
            _ => None,
        }
    }
}

/// A token and the 1-based line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    Open(char),
    Close(char),
    Comma,
    Int(i128),
    Float(f64),
    Word(String),
    Str(String),
    /// Any other character (`=`, `.`, `|`, `(`, `)`…).
    Punct(char),
}

/// A call typed at a shell prompt: the text after the prompt, and its line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Prompt {
    pub line: usize,
    pub input: String,
}

/// Splits a shell prompt (`1> `, `(node@host)2> `, `iex(3)> `, or a bare `> ` as in
/// documentation) from a line; returns what was typed after it.
pub(crate) fn prompt_input(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if let Some(rest) = t.strip_prefix("> ") {
        return Some(rest);
    }
    if t == ">" {
        return Some("");
    }
    let gt = t.find("> ")?;
    let head = &t[..gt];
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    // `2`, `(node@host)2`, `iex(3)`, `iex(node@host)3`.
    let ok = match head.strip_prefix("iex").unwrap_or(head).strip_prefix('(') {
        Some(rest) => match rest.find(')') {
            Some(close) => {
                let after = &rest[close + 1..];
                digits(after) || (after.is_empty() && digits(&rest[..close]))
            }
            None => false,
        },
        None => digits(head),
    };
    ok.then(|| &t[gt + 2..])
}

/// Tokenizes shell output: prompt lines are taken out (and returned), `%` comments and
/// `#` comment lines are dropped.
pub(crate) fn tokenize(text: &str) -> (Vec<(usize, Tok)>, Vec<Prompt>) {
    let mut toks = Vec::new();
    let mut prompts = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        if let Some(input) = prompt_input(line) {
            prompts.push(Prompt {
                line: number,
                input: input.trim().to_string(),
            });
            continue;
        }
        if line.trim_start().starts_with('#') {
            continue;
        }
        tokenize_line(line, number, &mut toks);
    }
    (toks, prompts)
}

fn tokenize_line(line: &str, number: usize, out: &mut Vec<(usize, Tok)>) {
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '%' => return,
            c if c.is_whitespace() => i += 1,
            '[' | '{' => {
                out.push((number, Tok::Open(c)));
                i += 1;
            }
            ']' | '}' => {
                out.push((number, Tok::Close(c)));
                i += 1;
            }
            ',' => {
                out.push((number, Tok::Comma));
                i += 1;
            }
            '"' | '\'' => {
                let mut s = String::new();
                i += 1;
                while i < chars.len() && chars[i] != c {
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        i += 1;
                    }
                    s.push(chars[i]);
                    i += 1;
                }
                i += 1;
                out.push((number, Tok::Str(s)));
            }
            c if c.is_ascii_digit()
                || (c == '-' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) =>
            {
                let start = i;
                i += 1;
                while i < chars.len()
                    && (chars[i].is_ascii_digit()
                        || chars[i] == '_'
                        || ((chars[i] == '.')
                            && chars.get(i + 1).is_some_and(char::is_ascii_digit))
                        || ((chars[i] == 'e' || chars[i] == 'E')
                            && chars
                                .get(i + 1)
                                .is_some_and(|n| n.is_ascii_digit() || *n == '-' || *n == '+'))
                        || ((chars[i] == '-' || chars[i] == '+')
                            && matches!(chars[i - 1], 'e' | 'E')))
                {
                    i += 1;
                }
                let text: String = chars[start..i].iter().filter(|&&c| c != '_').collect();
                let tok = if text.contains(['.', 'e', 'E']) {
                    text.parse::<f64>().ok().map(Tok::Float)
                } else {
                    text.parse::<i128>().ok().map(Tok::Int)
                };
                out.push((number, tok.unwrap_or(Tok::Word(text))));
            }
            c if c.is_alphabetic() || c == '_' || c == ':' => {
                let start = i;
                i += 1;
                while i < chars.len()
                    && (chars[i].is_alphanumeric() || matches!(chars[i], '_' | '@' | ':'))
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                // Elixir atoms (`:normal`) are Erlang atoms (`normal`).
                let word = word.trim_start_matches(':').to_string();
                out.push((number, Tok::Word(word)));
            }
            other => {
                out.push((number, Tok::Punct(other)));
                i += 1;
            }
        }
    }
}

/// How a term ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Parsed {
    /// A whole term.
    Done(Term),
    /// The input ended inside a list or tuple: the elements read so far.
    Cut(Term),
    /// Something that is not a term, at this line.
    Bad(usize),
}

/// The deepest nesting of lists, tuples and keyword entries read. The statistics
/// netceil imports nest a few levels; without a bound, a run of `[` in a hostile log
/// would exhaust the stack.
pub(crate) const MAX_DEPTH: usize = 128;

/// Reads one term starting at `toks[*pos]`, advancing `pos` past it. A term nested
/// deeper than [`MAX_DEPTH`] is not one.
pub(crate) fn parse_term(toks: &[(usize, Tok)], pos: &mut usize) -> Parsed {
    parse_nested(toks, pos, 0)
}

/// [`parse_term`] at nesting `depth`.
fn parse_nested(toks: &[(usize, Tok)], pos: &mut usize, depth: usize) -> Parsed {
    let Some((line, tok)) = toks.get(*pos) else {
        return Parsed::Cut(Term::List(Vec::new()));
    };
    if depth > MAX_DEPTH {
        return Parsed::Bad(*line);
    }
    *pos += 1;
    match tok {
        Tok::Int(i) => Parsed::Done(Term::Int(*i)),
        Tok::Float(f) => Parsed::Done(Term::Float(*f)),
        // An Elixir keyword entry (`run_queue: 3`) is the tuple `{run_queue, 3}`.
        Tok::Word(w) if w.len() > 1 && w.ends_with(':') => {
            match parse_nested(toks, pos, depth + 1) {
                Parsed::Done(t) => Parsed::Done(Term::Tuple(vec![
                    Term::Atom(w.trim_end_matches(':').to_string()),
                    t,
                ])),
                Parsed::Cut(t) => Parsed::Cut(Term::Tuple(vec![
                    Term::Atom(w.trim_end_matches(':').to_string()),
                    t,
                ])),
                Parsed::Bad(l) => Parsed::Bad(l),
            }
        }
        Tok::Word(w) => Parsed::Done(Term::Atom(w.clone())),
        Tok::Str(s) => Parsed::Done(Term::Str(s.clone())),
        Tok::Open(open) => {
            let close = if *open == '[' { ']' } else { '}' };
            let mut items = Vec::new();
            let wrap = |items: Vec<Term>| {
                if *open == '[' {
                    Term::List(items)
                } else {
                    Term::Tuple(items)
                }
            };
            if let Some((_, Tok::Close(c))) = toks.get(*pos) {
                if *c == close {
                    *pos += 1;
                    return Parsed::Done(wrap(items));
                }
            }
            loop {
                match parse_nested(toks, pos, depth + 1) {
                    Parsed::Done(t) => items.push(t),
                    Parsed::Cut(t) => {
                        // A cut inner term is kept only if it has something in it.
                        if !matches!(&t, Term::List(v) | Term::Tuple(v) if v.is_empty()) {
                            items.push(t);
                        }
                        return Parsed::Cut(wrap(items));
                    }
                    Parsed::Bad(l) => return Parsed::Bad(l),
                }
                match toks.get(*pos) {
                    None => return Parsed::Cut(wrap(items)),
                    Some((_, Tok::Comma)) => *pos += 1,
                    Some((_, Tok::Close(c))) if *c == close => {
                        *pos += 1;
                        return Parsed::Done(wrap(items));
                    }
                    Some((l, _)) => return Parsed::Bad(*l),
                }
            }
        }
        _ => Parsed::Bad(*line),
    }
}

/// Every top-level list in the token stream, with the line it starts on; a list that
/// the input cuts short comes last, marked `true`.
pub(crate) fn top_lists(toks: &[(usize, Tok)]) -> Vec<(usize, Vec<Term>, bool)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < toks.len() {
        if toks[pos].1 != Tok::Open('[') {
            pos += 1;
            continue;
        }
        let start = pos;
        let line = toks[pos].0;
        match parse_term(toks, &mut pos) {
            Parsed::Done(Term::List(items)) => out.push((line, items, false)),
            Parsed::Cut(Term::List(items)) => {
                out.push((line, items, true));
                break;
            }
            _ => pos = start + 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erlang_prompts() {
        assert_eq!(prompt_input("1> statistics(x)."), Some("statistics(x)."));
        assert_eq!(prompt_input("(n@h)12> a."), Some("a."));
        assert_eq!(prompt_input("iex(3)> :erlang.x()"), Some(":erlang.x()"));
        assert_eq!(prompt_input("> Start = x."), Some("Start = x."));
        assert_eq!(prompt_input("[{1,2,3}]"), None);
        assert_eq!(prompt_input("a > b"), None);
    }

    #[test]
    fn erlang_lists_with_comments_and_cuts() {
        let text = "[{1,2,3}, % {Id, A, T}\n {2,4,5}]\n[{:normal, 1, 2.5e-5, '0.0%'}]\n[{1,2,";
        let (toks, _) = tokenize(text);
        let lists = top_lists(&toks);
        assert_eq!(lists.len(), 3);
        assert_eq!(lists[0].1.len(), 2);
        assert_eq!(
            lists[1].1[0],
            Term::Tuple(vec![
                Term::Atom("normal".into()),
                Term::Int(1),
                Term::Float(2.5e-5),
                Term::Str("0.0%".into())
            ])
        );
        assert!(lists[2].2, "the last list is cut");
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        let (toks, _) = tokenize(&deep(MAX_DEPTH));
        assert!(matches!(parse_term(&toks, &mut 0), Parsed::Done(_)));
        let (toks, _) = tokenize(&deep(MAX_DEPTH + 2));
        assert!(matches!(parse_term(&toks, &mut 0), Parsed::Bad(1)));
        // Far deeper than any stack holds, open and keyword nesting alike: refused, not a crash.
        for hostile in ["[".repeat(200_000), "a: ".repeat(200_000)] {
            let (toks, _) = tokenize(&hostile);
            assert!(matches!(parse_term(&toks, &mut 0), Parsed::Bad(1)));
            let _ = top_lists(&toks);
        }
    }
}
