//! The target-side support: `support/gl_support.c` and `gl_signals.c`
//! with their shared `gl_support.h` (embedded, so an
//! installed CLI works from any directory) and the header `gl_layout.h`
//! generated for each module from the contract crate's (guardlift-abi) and
//! the runtime's own constants, so that no
//! layout constant, report code, protocol code or ABI signature is written
//! twice.

use crate::protocol::{Fault, LastWriteCode, EVENTS, FAULT_FUNCS};
use guardlift_abi::{
    trap_token, Entry, TRAP_OWNER_OFFSET, TRAP_READY_OFFSET, TRAP_SCRATCH_OFFSET,
    TRAP_VALUES_OFFSET,
};
use guardlift_runtime::heap::{
    BLOCK_ALIGN, DICT_MAGIC, DICT_OBJECT_BYTES, MAX_OBJ_ATTRS, OBJ_BODY_BYTES, REDZONE_BYTES,
};
use guardlift_runtime::layout::{self, DictLayout};
use guardlift_runtime::{Mode, ReportKind};
use std::fmt::Write as _;

/// The C source of the target-side support: the model heap, reports, `main`.
pub const SUPPORT_C: &str = include_str!("../support/gl_support.c");
/// Its protocol output, code table, backtraces and signal handlers.
pub const SIGNALS_C: &str = include_str!("../support/gl_signals.c");
/// What the two share.
pub const SUPPORT_H: &str = include_str!("../support/gl_support.h");
/// The support's files: (name, text); the `.c` files are compiled.
pub const SOURCES: [(&str, &str); 3] = [
    ("gl_support.c", SUPPORT_C),
    ("gl_signals.c", SIGNALS_C),
    ("gl_support.h", SUPPORT_H),
];
/// The name the support includes its generated header by.
pub const HEADER_NAME: &str = "gl_layout.h";

/// Stack of the thread the target runs the entry on: the CLI's run thread
/// has the same (adstack frames can be large).
pub const RUN_STACK_BYTES: u64 = guardlift_abi::RUN_STACK_BYTES as u64;
/// Bytes of the `guardlift_runtime` data symbol the object imports (its
/// address is the hidden runtime pointer; trap mode may keep a scratch area there).
pub const RUNTIME_SYMBOL_BYTES: u64 = 4096;
/// How far up the stack the fault handler looks for the IR call that
/// entered a host function, and a report for its stub's frame record (as
/// the host's fault handler does).
pub const SCAN_BYTES: u64 = 1 << 20;
/// A SIGSEGV this close to the low end of the run thread's stack (above or
/// below) is a stack overflow (as the host's fault handler decides).
pub const OVERFLOW_SLACK: u64 = 64 << 10;

fn c_ident(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// The C declaration of entry point or built-in `e`, derived from its row
/// of [`guardlift_abi::foreach_entry!`] (`void *rt` first when it takes
/// the runtime).
pub fn c_declaration(e: Entry) -> String {
    let mut params: Vec<String> = Vec::new();
    if e.needs_rt() {
        params.push("void *rt".into());
    }
    params.extend(
        e.params()
            .iter()
            .enumerate()
            .map(|(i, t)| format!("{} a{i}", t.c_type())),
    );
    if params.is_empty() {
        params.push("void".into());
    }
    let ret = e.ret().map_or("void", |t| t.c_type());
    format!("{ret} {}({});", e.symbol(), params.join(", "))
}

/// The runtime ABI the object imports, as C prototypes of every entry of
/// the table. A definition in the C file that disagrees fails to compile.
fn prototypes() -> String {
    let mut s = String::new();
    for &e in Entry::ALL {
        let _ = writeln!(s, "{}", c_declaration(e));
    }
    s
}

/// `gl_layout.h` for a module with `layout`.
pub fn header(layout: DictLayout) -> String {
    let mut s = String::new();
    let mut def = |name: &str, value: String| {
        let _ = writeln!(s, "#define GL_{name} {value}");
    };
    // Object layout (runtime::layout, runtime::heap).
    def(
        "DICT_SLOT_OFFSET",
        format!("({}LL)", layout.dict_slot_offset()),
    );
    def("DICT_WORD_BYTES", format!("{}u", layout::DICT_WORD_BYTES));
    def("TAG_MASK", format!("{:#x}ULL", layout::TAG_MASK));
    def("VALUES_TAG", format!("{:#x}ULL", layout::VALUES_TAG));
    def("DICT_TAG", format!("{:#x}ULL", layout::DICT_TAG));
    def("VALUES_BIT", format!("{:#x}ULL", layout::VALUES_BIT));
    def(
        "VALUES_WORD(values)",
        format!("((uint64_t)(values) + {:#x}ULL)", layout::values_word(0)),
    );
    def("ATTR_BYTES", format!("{}u", layout::ATTR_BYTES));
    def(
        "VALUES_CAPACITY_OFFSET",
        format!("({}LL)", layout::VALUES_CAPACITY_OFFSET),
    );
    def(
        "VALUES_HEADER_BYTES",
        format!("{}u", layout::VALUES_HEADER_BYTES),
    );
    def("OBJ_BODY_BYTES", format!("{OBJ_BODY_BYTES}LL"));
    def("BLOCK_ALIGN", format!("{BLOCK_ALIGN}u"));
    def("REDZONE_BYTES", format!("{REDZONE_BYTES}u"));
    def("DICT_OBJECT_BYTES", format!("{DICT_OBJECT_BYTES}u"));
    def("MAX_OBJ_ATTRS", format!("{MAX_OBJ_ATTRS}LL"));
    def("DICT_MAGIC", format!("{DICT_MAGIC:#x}ULL"));
    // Report kinds (runtime::report).
    let mut c = 0u8;
    while let Some(k) = ReportKind::from_code(c) {
        def(
            &format!("KIND_{}", c_ident(k.name())),
            format!("{}u", k.code()),
        );
        c += 1;
    }
    // Modes as the command line passes them.
    for m in [Mode::Recover, Mode::Abort, Mode::Trap] {
        def(
            &format!("MODE_{}", c_ident(m.name())),
            format!("\"{}\"", m.name()),
        );
    }
    // The protocol (protocol.rs).
    for (name, ch) in EVENTS {
        def(&format!("EV_{name}"), format!("'{}'", char::from(ch)));
    }
    for (i, f) in FAULT_FUNCS.iter().enumerate() {
        def(&format!("FN_{}", c_ident(f)), format!("{i}u"));
    }
    for f in Fault::ALL {
        def(&format!("FAULT_{}", f.c_name()), format!("{}u", f as u32));
    }
    for w in LastWriteCode::ALL {
        def(&format!("LW_{}", w.c_name()), format!("{}u", w as u32));
    }
    // Trap mode's scratch area at the runtime pointer (runtime::trap).
    def("TRAP_SCRATCH_OFFSET", format!("{TRAP_SCRATCH_OFFSET}"));
    def("TRAP_OWNER_OFFSET", format!("{TRAP_OWNER_OFFSET}"));
    def("TRAP_VALUES_OFFSET", format!("{TRAP_VALUES_OFFSET}"));
    def("TRAP_READY_OFFSET", format!("{TRAP_READY_OFFSET}"));
    def(
        "TRAP_TOKEN(site)",
        format!("((uint64_t)(site) + {}ULL)", trap_token(0)),
    );
    def("RUN_STACK_BYTES", format!("{RUN_STACK_BYTES}ULL"));
    def("RUNTIME_SYMBOL_BYTES", format!("{RUNTIME_SYMBOL_BYTES}u"));
    def("SCAN_BYTES", format!("{SCAN_BYTES}ULL"));
    def("OVERFLOW_SLACK", format!("{OVERFLOW_SLACK}ULL"));
    def(
        "MAX_FRAMES",
        format!("{}u", guardlift_runtime::backtrace::MAX_FRAMES),
    );
    def(
        "MAX_OBJECTS",
        format!("{}u", guardlift_runtime::report::MAX_OBJECTS),
    );
    format!(
        "/* {HEADER_NAME}: generated by guardlift-aot from guardlift_runtime's constants \
         (layout {layout}); do not edit. */\n\
         #ifndef GL_LAYOUT_H\n#define GL_LAYOUT_H\n#include <stdint.h>\n\n{s}\n\
         /* The runtime ABI the object imports (guardlift-abi's entry table). */\n{}\n\
         /* The runtime pointer's symbol and the entry wrapper (guardlift-aot). */\n\
         extern unsigned char {}[];\nvoid {}(uint64_t *args, uint64_t *ret);\n\n\
         /* Trap mode: the guards' trap instructions (gl_traps.c, generated per program). */\n\
         typedef struct {{ const char *pc; uint32_t site; uint32_t kind; }} gl_trap_t;\n\
         extern const gl_trap_t gl_traps[];\nextern const unsigned long gl_ntraps;\n\n\
         /* The IR functions' code (gl_traps.c): faults and backtraces name (index, offset). */\n\
         typedef struct {{ const char *start; uint64_t size; }} gl_code_t;\n\
         extern const gl_code_t gl_code[];\nextern const unsigned long gl_ncode;\n\n#endif\n",
        prototypes(),
        guardlift_jit::RUNTIME_SYMBOL,
        crate::wrap::START_SYMBOL,
    )
}

/// `gl_traps.c`: where each guard's trap instruction is (the function's
/// symbol plus the offset `emit_object_with_code` found) and which site
/// and kind it reports, and the code of each IR function in `code` (its
/// symbol and size: `gl_code[i]` is `code[i]`, which the host maps PCs
/// with). Symbols are named through asm labels, so IR names with `.` work.
pub fn program_tables(
    traps: &[guardlift_jit::ObjectTrap],
    code: &[guardlift_runtime::codemap::CodeFunction],
) -> String {
    let mut s = format!(
        "/* gl_traps.c: generated by guardlift-aot; do not edit. */\n#include \"{HEADER_NAME}\"\n"
    );
    let mut funcs: Vec<&str> = traps
        .iter()
        .map(|t| t.function.as_str())
        .chain(code.iter().map(|f| f.function.as_str()))
        .collect();
    funcs.sort_unstable();
    funcs.dedup();
    for (i, f) in funcs.iter().enumerate() {
        let _ = writeln!(s, "extern const char gl_trap_fn{i}[] __asm__(\"{f}\");");
    }
    s.push_str("const gl_trap_t gl_traps[] = {\n");
    for t in traps {
        let i = funcs.binary_search(&t.function.as_str()).unwrap_or(0);
        let _ = writeln!(
            s,
            "    {{gl_trap_fn{i} + {:#x}, {}u, {}u}},",
            t.offset,
            t.site,
            t.kind.code()
        );
    }
    if traps.is_empty() {
        s.push_str("    {0, 0u, 0u},\n");
    }
    let _ = writeln!(s, "}};\nconst unsigned long gl_ntraps = {};", traps.len());
    s.push_str("const gl_code_t gl_code[] = {\n");
    for f in code {
        let i = funcs.binary_search(&f.function.as_str()).unwrap_or(0);
        let _ = writeln!(s, "    {{gl_trap_fn{i}, {:#x}u}},", f.len);
    }
    if code.is_empty() {
        s.push_str("    {0, 0u},\n");
    }
    let _ = writeln!(s, "}};\nconst unsigned long gl_ncode = {};", code.len());
    s
}

/// `gl_traps.c` of a program linked with the Rust runtime library
/// (`aot/rt`): the tables of [`program_tables`] (self-contained: no
/// header), the program's `gl_module` (the entry wrapper, the tables, the
/// module's dict slot offset: the one constant of the layout the program
/// chose) and `main`, which hands them to the library's `gl_target_main`.
pub fn program_main(
    traps: &[guardlift_jit::ObjectTrap],
    code: &[guardlift_runtime::codemap::CodeFunction],
    layout: DictLayout,
) -> String {
    let tables = program_tables(traps, code).replace(
        &format!("#include \"{HEADER_NAME}\"\n"),
        "#include <stdint.h>\n\
         typedef struct { const char *pc; uint32_t site; uint32_t kind; } gl_trap_t;\n\
         typedef struct { const char *start; uint64_t size; } gl_code_t;\n",
    );
    format!(
        "{tables}\
         typedef struct {{ void (*start)(uint64_t *, uint64_t *); const gl_trap_t *traps; \
         unsigned long ntraps; const gl_code_t *code; unsigned long ncode; \
         int64_t dict_slot_offset; }} gl_module_t;\n\
         void {start}(uint64_t *args, uint64_t *ret);\n\
         int gl_target_main(int argc, char **argv, const gl_module_t *module);\n\
         static const gl_module_t gl_module = {{{start}, gl_traps, {ntraps}, gl_code, {ncode}, {off}}};\n\
         int main(int argc, char **argv) {{ return gl_target_main(argc, argv, &gl_module); }}\n",
        start = crate::wrap::START_SYMBOL,
        ntraps = traps.len(),
        ncode = code.len(),
        off = layout.dict_slot_offset(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use guardlift_runtime::TrapScratch;

    #[test]
    fn header_carries_the_runtime_constants() {
        let h = header(DictLayout::Phoenix);
        assert!(h.contains("#define GL_DICT_SLOT_OFFSET (24LL)"), "{h}");
        assert!(header(DictLayout::Cpython312).contains("#define GL_DICT_SLOT_OFFSET (-24LL)"));
        assert!(h.contains("#define GL_KIND_DICT_SLOT_TAG 0u"));
        assert!(h.contains("#define GL_KIND_SLOT_CLOBBER 3u"));
        assert!(h.contains("#define GL_MODE_RECOVER \"recover\""));
        assert!(
            h.contains("uint64_t gl_obj_new(void *rt, uint64_t a0);"),
            "{h}"
        );
        assert!(h.contains("double gl_sin(double a0);"), "{h}");
        assert!(
            h.contains("uint32_t gl_report_dict(void *rt, uint32_t a0, uint64_t a1, uint64_t a2);"),
            "{h}"
        );
        assert!(h.contains("extern unsigned char guardlift_runtime[];"));
        assert!(
            h.contains("#define GL_TRAP_TOKEN(site) ((uint64_t)(site) + 1ULL)"),
            "{h}"
        );
        // The scratch area fits in the runtime symbol the support defines.
        assert!(
            TRAP_SCRATCH_OFFSET as u64 + std::mem::size_of::<TrapScratch>() as u64
                <= RUNTIME_SYMBOL_BYTES
        );
        // Every entry point is declared, and defined by the C support.
        for &e in Entry::ALL {
            assert!(h.contains(&c_declaration(e)), "{e:?} not declared");
            assert!(
                SOURCES
                    .iter()
                    .any(|(_, text)| text.contains(&format!(" {}(", e.symbol()))),
                "the C support does not define {}",
                e.symbol()
            );
        }
        // The C files use no number the header should have given them.
        for (name, text) in SOURCES {
            for forbidden in ["-24", "0x18", "0b111", "1048576", "65536"] {
                assert!(!text.contains(forbidden), "{name} spells {forbidden}");
            }
        }
    }
}
