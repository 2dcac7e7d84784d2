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
use std::collections::HashMap;

/// Line → (column, opcode) of every instruction of `f`.
fn lines_of(f: &guardlift_ir::Function) -> HashMap<u32, (u32, &'static str)> {
    f.blocks
        .iter()
        .flat_map(|b| &b.insts)
        .map(|i| (i.loc.line, (i.loc.col, i.kind.opcode())))
        .collect()
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
        let (col, op) = lines.get(&line).copied().unwrap_or((0, "?"));
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
