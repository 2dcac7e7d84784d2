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
        out.push(PcLoc {
            start: l.start,
            end: l.end,
            line,
            col,
            op,
        });
    }
    out
}
