//! Names inside a function being read: value names and block labels,
//! usable before their definition. Operands hold provisional values and
//! branches provisional blocks until [`FnState::resolve`] at `}`.

use super::*;
use crate::Name;
use foldhash::fast::RandomState;
use hashbrown::HashTable;
use std::hash::BuildHasher;

pub(super) struct NameEntry<'a> {
    pub(super) name: &'a str,
    pub(super) value: Option<Value>,
    pub(super) def_line: u32,
    pub(super) first_use: Option<SrcLoc>,
}

pub(super) struct LabelEntry<'a> {
    pub(super) name: &'a str,
    pub(super) block: Option<u32>,
    pub(super) def_line: u32,
    pub(super) first_use: Option<SrcLoc>,
}

/// A slot not taken: where [`NameTable::insert`] puts the name looked up.
pub(super) enum Place {
    /// Slot `n` of numbered prefix `prefix` (grown to hold it).
    Dense { prefix: usize, n: usize },
    /// The hashed table, under this hash.
    Hashed(u64),
}

/// How many prefixes [`NameTable::dense_slot`] compares before hashing.
const FIRST_PREFIXES: usize = 4;

/// Marks a dense slot no name holds yet.
const FREE: u32 = u32::MAX;

/// The entry indices of one function's names (value names or labels).
///
/// A name ending in a decimal number without leading zeros (`%v123`,
/// `b42`, `%7`: what code generators emit) is found by its prefix and
/// number in a vector per prefix, like LLVM's numbered values: names used
/// near their definition are then near each other in memory, where a hash
/// table scatters them (in a function of 10^6 instructions, every lookup
/// missed the caches). Other names, and numbered ones past the dense
/// slots' budget, go to a hash table of 4-byte indices (compared through
/// the entries). The budget bounds the dense slots by the function's size,
/// so a name like `%v999999999` costs no more than a hashed one; and which
/// table holds a name never changes once decided (a vector only grows, and
/// growing it past a refused number would take more than the budget left
/// at the refusal).
pub(super) struct NameTable<'a> {
    hashed: HashTable<u32>,
    /// Indices into `dense`, hashed by prefix.
    prefix_ids: HashTable<u32>,
    /// Per prefix: the prefix and its slots by number (entry index or [`FREE`]).
    dense: Vec<(&'a str, Vec<u32>)>,
    /// Dense slots (and prefixes) still allowed.
    budget: usize,
    /// About how many names the function has.
    expected: usize,
    hasher: RandomState,
}

/// Hashed names after which the hashed table makes room for every name
/// expected (so that a big function of such names does not rehash as it
/// fills, each rehash a pass of cache misses over the whole table).
const PRESIZE_AFTER: usize = 64;

/// `name` as a prefix and a number of at most nine digits without leading
/// zeros, if it ends in one.
fn numbered(name: &str) -> Option<(&str, usize)> {
    let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 9 {
        return None;
    }
    let (prefix, num) = name.split_at(name.len() - digits);
    if digits > 1 && num.starts_with('0') {
        return None;
    }
    Some((prefix, num.parse().ok()?))
}

impl<'a> NameTable<'a> {
    /// A table for about `expected` names.
    pub(super) fn new(expected: usize) -> Self {
        NameTable {
            hashed: HashTable::new(),
            prefix_ids: HashTable::new(),
            dense: Vec::new(),
            budget: expected.saturating_mul(2).saturating_add(256),
            expected,
            hasher: RandomState::default(),
        }
    }

    /// The entry index of `name`, or the place to insert it. `name_of`
    /// gives an entry's name.
    pub(super) fn find(
        &mut self,
        name: &'a str,
        name_of: impl Fn(u32) -> &'a str,
    ) -> Result<u32, Place> {
        if let Some((prefix, n)) = numbered(name) {
            if let Some(p) = self.dense_slot(prefix, n) {
                return match self.dense[p].1[n] {
                    FREE => Err(Place::Dense { prefix: p, n }),
                    e => Ok(e),
                };
            }
        }
        let hash = self.hasher.hash_one(name);
        match self.hashed.find(hash, |&e| name_of(e) == name) {
            Some(&e) => Ok(e),
            None => Err(Place::Hashed(hash)),
        }
    }

    /// Records entry `e` at `place` (from [`NameTable::find`] of its name).
    pub(super) fn insert(&mut self, place: Place, e: u32, name_of: impl Fn(u32) -> &'a str) {
        match place {
            Place::Dense { prefix, n } => self.dense[prefix].1[n] = e,
            Place::Hashed(hash) => {
                let hasher = &self.hasher;
                if self.hashed.len() == PRESIZE_AFTER {
                    let more = self.expected.saturating_sub(PRESIZE_AFTER);
                    self.hashed.reserve(more, |&e| hasher.hash_one(name_of(e)));
                }
                self.hashed
                    .insert_unique(hash, e, |&e| hasher.hash_one(name_of(e)));
            }
        }
    }

    /// The prefix index whose slots hold number `n` (growing them, or adding
    /// the prefix, within the budget); `None` sends the name to the hash table.
    fn dense_slot(&mut self, prefix: &'a str, n: usize) -> Option<usize> {
        // The first prefixes met are compared directly (a generator's few
        // prefixes: `%v`, `%t`, `b`), the others found by hash.
        let first = (self.dense.iter().take(FIRST_PREFIXES)).position(|&(q, _)| q == prefix);
        let p = match first {
            Some(p) => p,
            None => self.prefix_by_hash(prefix, n)?,
        };
        let slots = &mut self.dense[p].1;
        if n >= slots.len() {
            let grow = n + 1 - slots.len();
            if grow > self.budget {
                return None;
            }
            self.budget -= grow;
            slots.resize(n + 1, FREE);
        }
        Some(p)
    }

    /// The index of `prefix` in `dense`, added if the budget has room for
    /// it and number `n`.
    fn prefix_by_hash(&mut self, prefix: &'a str, n: usize) -> Option<usize> {
        let hash = self.hasher.hash_one(prefix);
        let dense = &self.dense;
        if let Some(&p) = (self.prefix_ids).find(hash, |&p| dense[p as usize].0 == prefix) {
            return Some(p as usize);
        }
        // A prefix costs a slot of the budget, so that many prefixes of
        // one name each stay bounded too.
        if self.budget <= n + 1 {
            return None;
        }
        self.budget -= 1;
        let p = self.dense.len();
        self.dense.push((prefix, Vec::new()));
        let dense = &self.dense;
        let hasher = &self.hasher;
        (self.prefix_ids).insert_unique(hash, p as u32, |&p| hasher.hash_one(dense[p as usize].0));
        Some(p)
    }
}

/// A function being read. Operands hold provisional values (indices into
/// `entries`) and branches provisional blocks (indices into `labels`) until `}`.
pub(super) struct FnState<'a> {
    pub(super) func: Function,
    pub(super) known: Vec<Option<Type>>,
    /// Indices into `entries`, by name.
    pub(super) names: NameTable<'a>,
    pub(super) entries: Vec<NameEntry<'a>>,
    /// Indices into `labels`, by label.
    pub(super) label_ids: NameTable<'a>,
    pub(super) labels: Vec<LabelEntry<'a>>,
    pub(super) calls: Vec<PendingCall<'a>>,
    pub(super) cur_block: Option<usize>,
    /// The instructions of the current block, moved into it at the next
    /// label or at `}` ([`FnState::end_block`]), so that every block's
    /// vector is allocated once at its exact length.
    pub(super) insts: Vec<Inst>,
}

pub(super) fn index_u32(len: usize, loc: SrcLoc, what: &str) -> PResult<u32> {
    match u32::try_from(len) {
        Ok(v) if v < u32::MAX => Ok(v),
        _ => err(loc, format!("too many {what}")),
    }
}

/// The number of lines of `rest` before its first `}`: at a function
/// header, about how many lines the body has (a `}` in a comment ends the
/// count early). Only a capacity hint for the name tables, so it is also
/// bounded by the body's bytes (a line that defines a name takes more
/// than 8): a body of blank lines reserves nothing out of proportion.
pub(super) fn lines_before_brace(rest: &str) -> usize {
    let body = rest.find('}').map_or(rest, |end| &rest[..end]);
    let lines = body.bytes().filter(|&b| b == b'\n').count();
    lines.min(body.len() / 8)
}

impl<'a> FnState<'a> {
    /// A function whose body has about `lines` lines: the value names get
    /// room for one a line and the labels for one every four lines, so that
    /// a big function's tables are not rehashed as they fill (each rehash
    /// touches every entry again).
    pub(super) fn new(name: &str, loc: SrcLoc, lines: usize) -> Self {
        FnState {
            func: Function {
                name: name.to_string(),
                params: Vec::new(),
                ret: None,
                values: Vec::new(),
                blocks: Vec::new(),
                loc,
            },
            known: Vec::new(),
            names: NameTable::new(lines),
            entries: Vec::new(),
            label_ids: NameTable::new(lines / 4),
            labels: Vec::new(),
            calls: Vec::new(),
            cur_block: None,
            insts: Vec::new(),
        }
    }

    pub(super) fn name_entry(&mut self, name: &'a str, loc: SrcLoc) -> PResult<u32> {
        let entries = &self.entries;
        let place = match self.names.find(name, |e| entries[e as usize].name) {
            Ok(e) => return Ok(e),
            Err(place) => place,
        };
        let e = index_u32(self.entries.len(), loc, "value names")?;
        self.entries.push(NameEntry {
            name,
            value: None,
            def_line: 0,
            first_use: None,
        });
        let entries = &self.entries;
        self.names.insert(place, e, |e| entries[e as usize].name);
        Ok(e)
    }

    pub(super) fn define(
        &mut self,
        name: &'a str,
        loc: SrcLoc,
        def: ValueDef,
        ty: Option<Type>,
    ) -> PResult<Value> {
        let e = self.name_entry(name, loc)?;
        let entry = &mut self.entries[e as usize];
        if entry.value.is_some() {
            return err(
                loc,
                format!(
                    "value %{name} is already defined (at line {})",
                    entry.def_line
                ),
            );
        }
        let v = Value(index_u32(self.func.values.len(), loc, "values")?);
        entry.value = Some(v);
        entry.def_line = loc.line;
        self.func.values.push(ValueData {
            name: Name::from(name),
            ty: ty.unwrap_or(Type::I64),
            def,
        });
        self.known.push(ty);
        Ok(v)
    }

    /// A use of `%name`: a provisional value, resolved at `}`.
    pub(super) fn use_value(&mut self, name: &'a str, loc: SrcLoc) -> PResult<Value> {
        let e = self.name_entry(name, loc)?;
        let entry = &mut self.entries[e as usize];
        if entry.first_use.is_none() {
            entry.first_use = Some(loc);
        }
        Ok(Value(e))
    }

    /// The type of operand `v` (a name entry, as [`FnState::use_value`]
    /// gives it) when it is already defined with a known type.
    pub(super) fn operand_type(&self, v: Value) -> Option<Type> {
        let def = self.entries.get(v.index())?.value?;
        self.known.get(def.index()).copied().flatten()
    }

    pub(super) fn label_entry(&mut self, name: &'a str, loc: SrcLoc) -> PResult<u32> {
        if !is_block_name(name) {
            return err(loc, format!("invalid block label `{name}`"));
        }
        let labels = &self.labels;
        let place = match self.label_ids.find(name, |e| labels[e as usize].name) {
            Ok(e) => return Ok(e),
            Err(place) => place,
        };
        let e = index_u32(self.labels.len(), loc, "block labels")?;
        self.labels.push(LabelEntry {
            name,
            block: None,
            def_line: 0,
            first_use: None,
        });
        let labels = &self.labels;
        self.label_ids.insert(place, e, |e| labels[e as usize].name);
        Ok(e)
    }

    pub(super) fn use_label(&mut self, name: &'a str, loc: SrcLoc) -> PResult<Block> {
        let e = self.label_entry(name, loc)?;
        let entry = &mut self.labels[e as usize];
        if entry.first_use.is_none() {
            entry.first_use = Some(loc);
        }
        Ok(Block(e))
    }

    pub(super) fn define_label(&mut self, name: &'a str, loc: SrcLoc) -> PResult<usize> {
        let e = self.label_entry(name, loc)?;
        let entry = &mut self.labels[e as usize];
        if entry.block.is_some() {
            return err(
                loc,
                format!(
                    "block `{name}` is already defined (at line {})",
                    entry.def_line
                ),
            );
        }
        let b = index_u32(self.func.blocks.len(), loc, "blocks")?;
        entry.block = Some(b);
        entry.def_line = loc.line;
        self.func.blocks.push(BlockData {
            name: Name::from(name),
            params: Vec::new(),
            insts: Vec::new(),
            loc,
        });
        Ok(b as usize)
    }

    pub(super) fn block_call(&mut self, c: &mut Cur<'_, 'a>) -> PResult<BlockCall> {
        let (name, loc) = c.word("a block label")?;
        let block = self.use_label(name, loc)?;
        let args = if c.eat(Tok::LParen) {
            self.args(c)?
        } else {
            ThinVec::new()
        };
        Ok(BlockCall { block, args })
    }

    /// Values up to `)`, after a `(`.
    /// A parenthesized argument list after its `(`, into a `Vec` (a call)
    /// or a `ThinVec` (a block call).
    pub(super) fn args<C: Default + Extend<Value>>(&mut self, c: &mut Cur<'_, 'a>) -> PResult<C> {
        let mut args = C::default();
        if c.eat(Tok::RParen) {
            return Ok(args);
        }
        loop {
            let (v, l) = c.value()?;
            args.extend(std::iter::once(self.use_value(v, l)?));
            if c.eat(Tok::Comma) {
                continue;
            }
            if c.eat(Tok::RParen) {
                return Ok(args);
            }
            return c.fail("`,` or `)`");
        }
    }

    pub(super) fn operand(&mut self, c: &mut Cur<'_, 'a>) -> PResult<Value> {
        let (v, l) = c.value()?;
        self.use_value(v, l)
    }

    /// `, %v`
    pub(super) fn next_operand(&mut self, c: &mut Cur<'_, 'a>) -> PResult<Value> {
        c.expect(Tok::Comma)?;
        self.operand(c)
    }

    /// Moves the instructions read since the last label into their block.
    pub(super) fn end_block(&mut self) {
        if let Some(block) = self.cur_block.and_then(|b| self.func.blocks.get_mut(b)) {
            block.insts = self.insts.drain(..).collect();
        }
    }

    /// Resolves names at `}`: every label and value must be defined.
    pub(super) fn resolve(&mut self) -> PResult<()> {
        let fname = &self.func.name;
        if self.func.blocks.is_empty() {
            return err(self.func.loc, format!("function @{fname} has no blocks"));
        }
        let missing_label = self
            .labels
            .iter()
            .filter(|l| l.block.is_none())
            .filter_map(|l| l.first_use.map(|u| (u, l.name)))
            .min();
        if let Some((loc, name)) = missing_label {
            return err(loc, format!("unknown block `{name}` in function @{fname}"));
        }
        let missing_value = self
            .entries
            .iter()
            .filter(|e| e.value.is_none())
            .filter_map(|e| e.first_use.map(|u| (u, e.name)))
            .min();
        if let Some((loc, name)) = missing_value {
            return err(loc, format!("unknown value %{name} in function @{fname}"));
        }
        let vmap: Vec<Value> = self
            .entries
            .iter()
            .map(|e| e.value.unwrap_or(Value(0)))
            .collect();
        let bmap: Vec<Block> = self
            .labels
            .iter()
            .map(|l| Block(l.block.unwrap_or(0)))
            .collect();
        for block in &mut self.func.blocks {
            for inst in &mut block.insts {
                inst.kind.for_each_operand_mut(|v| {
                    *v = vmap.get(v.index()).copied().unwrap_or(Value(0))
                });
                inst.kind
                    .for_each_dest_mut(|b| *b = bmap.get(b.index()).copied().unwrap_or(Block(0)));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{numbered, NameTable, Place};

    #[test]
    fn numbered_names_split_into_prefix_and_number() {
        assert_eq!(numbered("v123"), Some(("v", 123)));
        assert_eq!(numbered("7"), Some(("", 7)));
        assert_eq!(numbered("b0"), Some(("b", 0)));
        assert_eq!(numbered("x.2"), Some(("x.", 2)));
        // Leading zeros and long numbers are other names.
        assert_eq!(numbered("v01"), None);
        assert_eq!(numbered("v1234567890"), None);
        assert_eq!(numbered("acc"), None);
    }

    /// Inserts every name of `names` not yet in `t` (entry = position in
    /// `entries`), returning each name's entry.
    fn intern<'a>(
        t: &mut NameTable<'a>,
        entries: &mut Vec<&'a str>,
        names: &[&'a str],
    ) -> Vec<u32> {
        names
            .iter()
            .map(|&n| {
                let found = t.find(n, |e| entries[e as usize]);
                match found {
                    Ok(e) => e,
                    Err(place) => {
                        let e = entries.len() as u32;
                        entries.push(n);
                        t.insert(place, e, |e| entries[e as usize]);
                        e
                    }
                }
            })
            .collect()
    }

    /// Every name keeps one entry, whichever table holds it, including
    /// after the dense budget ran out (numbers far apart, many prefixes,
    /// leading zeros, names without numbers).
    #[test]
    fn a_name_always_finds_its_entry() {
        let owned: Vec<String> = (0..3000)
            .map(|i| match i % 6 {
                0 => format!("v{i}"),
                1 => format!("w{}", i * 1000),
                2 => format!("p{i}_{}", i % 7),
                3 => format!("v0{i}"),
                4 => format!("name{}x", i),
                _ => format!("{}", i / 2),
            })
            .collect();
        let names: Vec<&str> = owned.iter().map(String::as_str).collect();
        let mut t = NameTable::new(100);
        let mut entries = Vec::new();
        let first = intern(&mut t, &mut entries, &names);
        let mut rev = names.clone();
        rev.reverse();
        let mut again = intern(&mut t, &mut entries, &rev);
        again.reverse();
        assert_eq!(first, again, "a name found another entry");
        for (i, &e) in first.iter().enumerate() {
            assert_eq!(entries[e as usize], names[i]);
        }
        let distinct: std::collections::HashSet<&str> = names.iter().copied().collect();
        assert_eq!(entries.len(), distinct.len(), "a name got two entries");
        // The budget (2 * 100 + 256 slots) was spent, the rest hashed.
        assert!(t.budget < 2 * 100 + 256);
        assert!(t.hashed.len() > 1000);
    }

    /// A huge number costs no dense slots: it goes to the hash table.
    #[test]
    fn a_huge_number_is_hashed() {
        let mut t = NameTable::new(10);
        assert!(matches!(
            t.find("v999999999", |_| ""),
            Err(Place::Hashed(_))
        ));
        assert!(t.dense.iter().all(|(_, s)| s.is_empty()));
        assert!(matches!(
            t.find("v3", |_| ""),
            Err(Place::Dense { n: 3, .. })
        ));
    }
}
