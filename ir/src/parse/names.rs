//! Names inside a function being read: value names and block labels,
//! usable before their definition. Operands hold provisional values and
//! branches provisional blocks until [`FnState::resolve`] at `}`.

use super::*;
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

/// A function being read. Operands hold provisional values (indices into
/// `entries`) and branches provisional blocks (indices into `labels`) until `}`.
pub(super) struct FnState<'a> {
    pub(super) func: Function,
    pub(super) known: Vec<Option<Type>>,
    /// Indices into `entries`, hashed by name: a table of 4-byte indices,
    /// not of (name, index) pairs, so that a big function's table is a
    /// fifth of the size; a lookup compares with the entry, which for a
    /// name used near its definition was touched recently.
    pub(super) names: HashTable<u32>,
    pub(super) entries: Vec<NameEntry<'a>>,
    /// Indices into `labels`, hashed by label (as `names`).
    pub(super) label_ids: HashTable<u32>,
    /// The hasher of `names` and `label_ids`.
    pub(super) hasher: RandomState,
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
            names: HashTable::with_capacity(lines),
            entries: Vec::new(),
            label_ids: HashTable::with_capacity(lines / 4),
            hasher: RandomState::default(),
            labels: Vec::new(),
            calls: Vec::new(),
            cur_block: None,
            insts: Vec::new(),
        }
    }

    pub(super) fn name_entry(&mut self, name: &'a str, loc: SrcLoc) -> PResult<u32> {
        let hasher = &self.hasher;
        let hash = hasher.hash_one(name);
        let entries = &self.entries;
        if let Some(&e) = self.names.find(hash, |&e| entries[e as usize].name == name) {
            return Ok(e);
        }
        let e = index_u32(self.entries.len(), loc, "value names")?;
        self.entries.push(NameEntry {
            name,
            value: None,
            def_line: 0,
            first_use: None,
        });
        let entries = &self.entries;
        self.names
            .insert_unique(hash, e, |&e| hasher.hash_one(entries[e as usize].name));
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
            name: name.to_string(),
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

    pub(super) fn label_entry(&mut self, name: &'a str, loc: SrcLoc) -> PResult<u32> {
        if !is_block_name(name) {
            return err(loc, format!("invalid block label `{name}`"));
        }
        let hasher = &self.hasher;
        let hash = hasher.hash_one(name);
        let labels = &self.labels;
        if let Some(&e) = self
            .label_ids
            .find(hash, |&e| labels[e as usize].name == name)
        {
            return Ok(e);
        }
        let e = index_u32(self.labels.len(), loc, "block labels")?;
        self.labels.push(LabelEntry {
            name,
            block: None,
            def_line: 0,
            first_use: None,
        });
        let labels = &self.labels;
        self.label_ids
            .insert_unique(hash, e, |&e| hasher.hash_one(labels[e as usize].name));
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
            name: name.to_string(),
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
            Vec::new()
        };
        Ok(BlockCall { block, args })
    }

    /// Values up to `)`, after a `(`.
    pub(super) fn args(&mut self, c: &mut Cur<'_, 'a>) -> PResult<Vec<Value>> {
        let mut args = Vec::new();
        if c.eat(Tok::RParen) {
            return Ok(args);
        }
        loop {
            let (v, l) = c.value()?;
            args.push(self.use_value(v, l)?);
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
