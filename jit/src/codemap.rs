//! The PC → IR-site map of a compiled function, read from the source
//! locations Cranelift keeps per machine instruction
//! (`compiled_code().buffer.get_srclocs_sorted()`) before the compilation
//! context is cleared, and registered once per compiled module in the
//! runtime's one code registry ([`guardlift_runtime::codemap`], through
//! `Runtime::register_code`), which serves the fault handler, backtraces
//! and watchpoints alike.
//!
//! The lowering gives every Cranelift instruction of an IR instruction
//! that instruction's line (one instruction per line), and the
//! instructions of a trap sequence an index into the guard sites
//! ([`lower::trap_index`]); both resolve to the IR instruction's line,
//! column and opcode here.
//!
//! A fault's site is the faulting access (spec §6.2), but a backend may
//! merge a load into the instruction that uses it (x86_64's `add reg,
//! [mem]`): that machine instruction carries the user's source location.
//! Cranelift records a trap at the exact offset of every memory access
//! that may trap ([`lower::access_trap_code`]); where one lies in a range
//! of an instruction that is no access, the offset is mapped to the access
//! merged into it ([`merged_access`]).

use crate::lower;
use cranelift_codegen::CompiledCode;
use guardlift_runtime::codemap::PcLoc;

/// Line → (column, opcode) of every instruction of `f`, sorted by line:
/// where several instructions share a line, the last one in layout order
/// (a flat vector, not a hash map: a big function's lines are read back
/// almost in order, and the vector is built without rehashing).
fn lines_of(f: &guardlift_ir::Function) -> Vec<(u32, u32, &'static str)> {
    let mut lines: Vec<(u32, u32, &'static str)> = Vec::with_capacity(f.inst_count());
    lines.extend(
        f.blocks
            .iter()
            .flat_map(|b| &b.insts)
            .map(|i| (i.loc.line, i.loc.col, i.kind.opcode())),
    );
    // Stable: equal lines stay in layout order, and the last one is kept.
    lines.sort_by_key(|&(line, ..)| line);
    lines.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            *kept = *later;
        }
        same
    });
    lines
}

/// Is `op` an IR memory access (what may fault on a wild address)?
fn is_access(op: &str) -> bool {
    matches!(
        op,
        "load" | "store" | "dict_slot.load" | "dict_slot.store" | "load_attr" | "store_attr"
    )
}

/// The IR access a backend may have merged into the instruction on `line`
/// of `f` (the last one on the line, as [`lines_of`] keeps): of its
/// operands defined by a load (`load`, `dict_slot.load`, `load_attr`) in
/// its own block, the one defined last. A load is merged only into a user
/// in its block with no other access (a side effect) in between, so that
/// is the only candidate. `None` when the instruction is itself an access
/// or has no such operand.
fn merged_access(f: &guardlift_ir::Function, line: u32) -> Option<(u32, u32, &'static str)> {
    for b in &f.blocks {
        let Some(at) = b.insts.iter().rposition(|i| i.loc.line == line) else {
            continue;
        };
        let user = &b.insts[at];
        if is_access(user.kind.opcode()) {
            return None;
        }
        let mut best: Option<usize> = None;
        user.kind.for_each_operand(|v| {
            let def = b.insts[..at].iter().rposition(|i| {
                i.result == Some(v)
                    && matches!(i.kind.opcode(), "load" | "dict_slot.load" | "load_attr")
            });
            if def > best {
                best = def;
            }
        });
        return best.map(|d| {
            let i = &b.insts[d];
            (i.loc.line, i.loc.col, i.kind.opcode())
        });
    }
    None
}

/// The map of one function's code: offsets → IR sites. `trap_sites` and
/// `site_infos` resolve trap sequences (`site_infos` indexed by
/// `site - site_base`).
pub fn pc_locs(
    code: &CompiledCode,
    f: &guardlift_ir::Function,
    trap_sites: &[(u32, guardlift_runtime::ReportKind)],
    site_infos: &guardlift_runtime::sites::ModuleSites,
    site_base: u32,
) -> Vec<PcLoc> {
    let lines = lines_of(f);
    let mut out: Vec<PcLoc> = Vec::new();
    let traps = code.buffer.traps();
    let access = lower::access_trap_code();
    for l in code.buffer.get_srclocs_sorted() {
        if l.loc.is_default() {
            continue;
        }
        let line = match lower::trap_index(l.loc) {
            Some(ix) => trap_sites
                .get(ix)
                .and_then(|&(site, _)| site_infos.get(&site.checked_sub(site_base)?))
                .map_or(0, |s| s.line),
            None => l.loc.bits(),
        };
        let (col, op) = lines
            .binary_search_by_key(&line, |&(l, ..)| l)
            .map_or((0, "?"), |i| (lines[i].1, lines[i].2));
        let whole = PcLoc {
            start: l.start,
            end: l.end,
            line,
            col,
            op,
        };
        // Memory accesses in this range at an instruction that is no
        // access: merged loads, each mapped to its own IR load.
        let first = traps.partition_point(|t| t.offset < l.start);
        let merged = traps[first..]
            .iter()
            .take_while(|t| t.offset < l.end)
            .filter(|t| Some(t.code) == access)
            .filter(|_| line != 0 && !is_access(op));
        let mut start = l.start;
        for t in merged {
            let Some((aline, acol, aop)) = merged_access(f, line) else {
                break;
            };
            if t.offset > start {
                out.push(PcLoc {
                    start,
                    end: t.offset,
                    ..whole
                });
            }
            // The faulting PC is the instruction's first byte.
            out.push(PcLoc {
                start: t.offset,
                end: t.offset + 1,
                line: aline,
                col: acol,
                op: aop,
            });
            start = t.offset + 1;
        }
        if start < l.end {
            out.push(PcLoc { start, ..whole });
        }
    }
    out
}
