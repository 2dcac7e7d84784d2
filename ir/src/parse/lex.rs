//! The lexer (one line at a time, into [`Token`]s) and the token cursor
//! [`Cur`] the parser reads a line through; integer and float literals.

use super::*;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Tok<'a> {
    /// Opcodes, types, labels, numbers, keywords: `[A-Za-z0-9_.-]+`.
    Word(&'a str),
    /// `%name` (without the `%`).
    Val(&'a str),
    /// `@name` (without the `@`).
    Func(&'a str),
    /// `!name` (without the `!`).
    Bang(&'a str),
    LParen,
    RParen,
    Comma,
    Colon,
    Eq,
    LBrace,
    RBrace,
    Arrow,
    LBracket,
    RBracket,
}

impl Tok<'_> {
    pub(super) fn describe(&self) -> String {
        match *self {
            Tok::Word(w) => format!("`{w}`"),
            Tok::Val(v) => format!("`%{v}`"),
            Tok::Func(f) => format!("`@{f}`"),
            Tok::Bang(b) => format!("`!{b}`"),
            Tok::LParen => "`(`".into(),
            Tok::RParen => "`)`".into(),
            Tok::Comma => "`,`".into(),
            Tok::Colon => "`:`".into(),
            Tok::Eq => "`=`".into(),
            Tok::LBrace => "`{`".into(),
            Tok::RBrace => "`}`".into(),
            Tok::Arrow => "`->`".into(),
            Tok::LBracket => "`[`".into(),
            Tok::RBracket => "`]`".into(),
        }
    }
}

#[derive(Copy, Clone, Debug)]
pub(super) struct Token<'a> {
    pub(super) tok: Tok<'a>,
    pub(super) col: u32,
}

pub(super) fn is_word_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'.'
}

/// 1-based column of byte `i` of a line whose bytes before `i` are all ASCII.
pub(super) fn col_of(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX - 1).saturating_add(1)
}

/// Index of the first byte at or after `from` that does not satisfy `ok`.
pub(super) fn scan(b: &[u8], from: usize, ok: impl Fn(u8) -> bool) -> usize {
    let mut j = from;
    while j < b.len() && ok(b[j]) {
        j += 1;
    }
    j
}

/// Lexes one line into `out`; returns the column just past its last token.
///
/// Only ASCII is accepted outside comments, so every byte index the lexer
/// stops at is a char boundary and byte offsets equal character columns.
pub(super) fn lex<'a>(line: &'a str, lineno: u32, out: &mut Vec<Token<'a>>) -> PResult<u32> {
    out.clear();
    let b = line.as_bytes();
    let n = b.len();
    let mut i = 0usize;
    while i < n {
        let c = b[i];
        let col = col_of(i);
        let here = SrcLoc::new(lineno, col);
        let single = match c {
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b';' => break,
            b'(' => Some(Tok::LParen),
            b')' => Some(Tok::RParen),
            b',' => Some(Tok::Comma),
            b':' => Some(Tok::Colon),
            b'=' => Some(Tok::Eq),
            b'{' => Some(Tok::LBrace),
            b'}' => Some(Tok::RBrace),
            b'[' => Some(Tok::LBracket),
            b']' => Some(Tok::RBracket),
            _ => None,
        };
        if let Some(tok) = single {
            out.push(Token { tok, col });
            i += 1;
            continue;
        }
        match c {
            b'-' if b.get(i + 1) == Some(&b'>') => {
                out.push(Token {
                    tok: Tok::Arrow,
                    col,
                });
                i += 2;
            }
            b'%' => {
                let e = scan(b, i + 1, is_word_char);
                if e == i + 1 {
                    return err(here, "expected a value name after `%`");
                }
                out.push(Token {
                    tok: Tok::Val(&line[i + 1..e]),
                    col,
                });
                i = e;
            }
            b'@' => {
                if !matches!(b.get(i + 1), Some(&d) if d.is_ascii_alphabetic() || d == b'_') {
                    return err(here, "expected a function name after `@`");
                }
                let e = scan(b, i + 1, is_word_char);
                out.push(Token {
                    tok: Tok::Func(&line[i + 1..e]),
                    col,
                });
                i = e;
            }
            b'!' => {
                let e = scan(b, i + 1, |d| d.is_ascii_alphanumeric() || d == b'_');
                if e == i + 1 {
                    return err(here, "expected an annotation name after `!`");
                }
                out.push(Token {
                    tok: Tok::Bang(&line[i + 1..e]),
                    col,
                });
                i = e;
            }
            c if is_word_char(c) || c == b'-' => {
                let body = if c == b'-' {
                    b.get(i + 1..).unwrap_or(&[])
                } else {
                    b.get(i..).unwrap_or(&[])
                };
                let numeric = body.first().is_some_and(u8::is_ascii_digit);
                let hex = body.starts_with(b"0x") || body.starts_with(b"0X");
                let mut j = i + 1;
                while j < n {
                    let d = b[j];
                    let exp_sign = numeric
                        && !hex
                        && (d == b'+' || d == b'-')
                        && matches!(b[j - 1], b'e' | b'E')
                        && b.get(j + 1) != Some(&b'>');
                    if is_word_char(d) || exp_sign {
                        j += 1;
                    } else {
                        break;
                    }
                }
                out.push(Token {
                    tok: Tok::Word(&line[i..j]),
                    col,
                });
                i = j;
            }
            _ => {
                let ch = line.get(i..).and_then(|s| s.chars().next()).unwrap_or('?');
                return err(
                    here,
                    format!("unexpected character `{}`", ch.escape_debug()),
                );
            }
        }
    }
    Ok(col_of(i.min(n)))
}

// ---------------------------------------------------------------------------
// Token cursor over one line.

pub(super) struct Cur<'t, 'a> {
    pub(super) toks: &'t [Token<'a>],
    pub(super) pos: usize,
    pub(super) line: u32,
    pub(super) end_col: u32,
}

impl<'a> Cur<'_, 'a> {
    pub(super) fn peek(&self) -> Option<Tok<'a>> {
        self.toks.get(self.pos).map(|t| t.tok)
    }
    pub(super) fn peek_at(&self, k: usize) -> Option<Tok<'a>> {
        self.toks.get(self.pos.saturating_add(k)).map(|t| t.tok)
    }
    pub(super) fn loc(&self) -> SrcLoc {
        SrcLoc::new(
            self.line,
            self.toks.get(self.pos).map_or(self.end_col, |t| t.col),
        )
    }
    pub(super) fn found(&self) -> String {
        self.toks
            .get(self.pos)
            .map_or_else(|| "end of line".to_string(), |t| t.tok.describe())
    }
    pub(super) fn fail<T>(&self, expected: &str) -> PResult<T> {
        err(
            self.loc(),
            format!("expected {expected}, found {}", self.found()),
        )
    }
    pub(super) fn bump(&mut self) {
        self.pos = self.pos.saturating_add(1);
    }
    pub(super) fn eat(&mut self, t: Tok<'_>) -> bool {
        if self.peek() == Some(t) {
            self.bump();
            true
        } else {
            false
        }
    }
    pub(super) fn expect(&mut self, t: Tok<'_>) -> PResult<SrcLoc> {
        let loc = self.loc();
        if self.eat(t) {
            Ok(loc)
        } else {
            self.fail(&t.describe())
        }
    }
    pub(super) fn value(&mut self) -> PResult<(&'a str, SrcLoc)> {
        let loc = self.loc();
        match self.peek() {
            Some(Tok::Val(v)) => {
                self.bump();
                Ok((v, loc))
            }
            _ => self.fail("a value (`%name`)"),
        }
    }
    pub(super) fn func(&mut self) -> PResult<(&'a str, SrcLoc)> {
        let loc = self.loc();
        match self.peek() {
            Some(Tok::Func(v)) => {
                self.bump();
                Ok((v, loc))
            }
            _ => self.fail("a function name (`@name`)"),
        }
    }
    pub(super) fn word(&mut self, what: &str) -> PResult<(&'a str, SrcLoc)> {
        let loc = self.loc();
        match self.peek() {
            Some(Tok::Word(w)) => {
                self.bump();
                Ok((w, loc))
            }
            _ => self.fail(what),
        }
    }
    pub(super) fn ty(&mut self) -> PResult<Type> {
        let (w, loc) = self.word("a type")?;
        Type::from_name(w).map_or_else(|| err(loc, format!("unknown type `{w}`")), Ok)
    }
    pub(super) fn end(&self) -> PResult<()> {
        if self.pos < self.toks.len() {
            err(
                self.loc(),
                format!("unexpected {} (expected end of line)", self.found()),
            )
        } else {
            Ok(())
        }
    }
    /// An integer literal within `lo..=hi`; `what` names it in the error.
    pub(super) fn int_in(
        &mut self,
        expected: &str,
        lo: i128,
        hi: i128,
        what: &str,
    ) -> PResult<i128> {
        let (w, loc) = self.word(expected)?;
        let v = int_lit(w, loc)?;
        if v < lo || v > hi {
            return err(loc, format!("integer literal out of range for {what}: {w}"));
        }
        Ok(v)
    }
    pub(super) fn u32_lit(&mut self, expected: &str, what: &str) -> PResult<u32> {
        let v = self.int_in(expected, 0, u32::MAX as i128, what)?;
        Ok(u32::try_from(v).unwrap_or(0))
    }
}

/// Parses an integer literal: optional `-`, then decimal digits or `0x` hex.
pub(super) fn int_lit(s: &str, loc: SrcLoc) -> PResult<i128> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (radix, digits) = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        Some(r) => (16u32, r),
        None => (10u32, body),
    };
    if digits.is_empty() || !digits.chars().all(|d| d.is_digit(radix)) {
        return err(loc, format!("invalid integer literal `{s}`"));
    }
    let mut acc: i128 = 0;
    for d in digits.chars() {
        let v = d.to_digit(radix).unwrap_or(0);
        acc = match acc
            .checked_mul(radix as i128)
            .and_then(|a| a.checked_add(v as i128))
        {
            Some(a) => a,
            None => return err(loc, format!("integer literal out of range: {s}")),
        };
    }
    Ok(if neg { -acc } else { acc })
}

/// Parses a float literal for a constant of type `ty` (the grammar and
/// range rules of [`crate::literal::parse_float`], shared with entry arguments).
pub(super) fn float_lit(s: &str, ty: Type, loc: SrcLoc) -> PResult<f64> {
    crate::literal::parse_float(ty, s).map_err(|e| ParseError::new(loc, e))
}
