//! The tables a program's generated `gl_traps.c` hands the target runtime
//! library (`aot/rt`, through `gl_target_main`): each guard's trap
//! instruction, each IR function's code, and the module record that
//! points at both. Written once here: `guardlift_aot::support` prints the
//! C declarations from these rows, `aot/rt`'s `code::GlTrap`, `GlCode` and
//! `GlModule` are pinned to them by a test, and [`crate::ABI_STAMP`]
//! hashes them, so a library built from a tree whose tables differ is
//! refused instead of reading the program's tables wrong.

/// One field of a table: its C declaration, `{}` standing for the name.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// The field's name.
    pub name: &'static str,
    /// Its C declarator with `{}` for the name (`"uint32_t {}"`).
    pub decl: &'static str,
    /// Its size and alignment in bytes on the 64-bit targets (every field
    /// is a pointer or a fixed-width integer: size = alignment).
    pub bytes: u32,
}

/// One table's C type.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Table {
    /// The C type's name.
    pub c_name: &'static str,
    /// Its fields, in order.
    pub fields: &'static [Field],
}

const fn f(name: &'static str, decl: &'static str, bytes: u32) -> Field {
    Field { name, decl, bytes }
}

/// `gl_traps[]`: one guard's trap instruction (trap mode).
pub const TRAP: Table = Table {
    c_name: "gl_trap_t",
    fields: &[
        f("pc", "const char *{}", 8),
        f("site", "uint32_t {}", 4),
        f("kind", "uint32_t {}", 4),
    ],
};

/// `gl_code[]`: one IR function's code (its index is the function's in the
/// host's code table).
pub const CODE: Table = Table {
    c_name: "gl_code_t",
    fields: &[f("start", "const char *{}", 8), f("size", "uint64_t {}", 8)],
};

/// `gl_module`: what `main` hands `gl_target_main`.
pub const MODULE: Table = Table {
    c_name: "gl_module_t",
    fields: &[
        f("start", "void (*{})(uint64_t *, uint64_t *)", 8),
        f("traps", "const gl_trap_t *{}", 8),
        f("ntraps", "unsigned long {}", 8),
        f("code", "const gl_code_t *{}", 8),
        f("ncode", "unsigned long {}", 8),
        f("dict_slot_offset", "int64_t {}", 8),
    ],
};

/// Every table, in the order `gl_traps.c` declares them.
pub const TABLES: [Table; 3] = [TRAP, CODE, MODULE];

impl Table {
    /// `typedef struct { ...; } name;`
    pub fn c_typedef(&self) -> String {
        let fields: String = (self.fields.iter())
            .map(|f| format!("{}; ", f.decl.replace("{}", f.name)))
            .collect();
        format!("typedef struct {{ {fields}}} {};", self.c_name)
    }

    /// The offset of field `i` (natural alignment, as the C and Rust
    /// `repr(C)` layouts place it); the struct's size for `i` = the field
    /// count. A `const fn`, so that the library's structs are checked
    /// against it at compile time.
    pub const fn offset(&self, i: usize) -> usize {
        let mut at = 0usize;
        let mut k = 0;
        while k < i && k < self.fields.len() {
            let b = self.fields[k].bytes as usize;
            at = at.div_ceil(b) * b + b;
            k += 1;
        }
        if i < self.fields.len() {
            let b = self.fields[i].bytes as usize;
            at = at.div_ceil(b) * b;
        }
        at
    }

    /// The struct's size: past its last field, rounded to its alignment.
    pub const fn size(&self) -> usize {
        let mut align = 1usize;
        let mut k = 0;
        while k < self.fields.len() {
            if self.fields[k].bytes as usize > align {
                align = self.fields[k].bytes as usize;
            }
            k += 1;
        }
        self.offset(self.fields.len()).div_ceil(align) * align
    }

    /// Is field `i` named `name`? (`const`, as [`Self::offset`].)
    pub const fn field_is(&self, i: usize, name: &str) -> bool {
        if i >= self.fields.len() {
            return false;
        }
        let (a, b) = (self.fields[i].name.as_bytes(), name.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let mut k = 0;
        while k < a.len() {
            if a[k] != b[k] {
                return false;
            }
            k += 1;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each field's offset and the struct's size.
    fn layout(t: &Table) -> (Vec<usize>, usize) {
        ((0..t.fields.len()).map(|i| t.offset(i)).collect(), t.size())
    }

    #[test]
    fn typedefs_and_layouts() {
        assert_eq!(
            TRAP.c_typedef(),
            "typedef struct { const char *pc; uint32_t site; uint32_t kind; } gl_trap_t;"
        );
        assert_eq!(layout(&TRAP), (vec![0, 8, 12], 16));
        assert_eq!(layout(&CODE), (vec![0, 8], 16));
        assert_eq!(layout(&MODULE), (vec![0, 8, 16, 24, 32, 40], 48));
        assert!(MODULE
            .c_typedef()
            .contains("void (*start)(uint64_t *, uint64_t *); "));
        assert!(TRAP.field_is(1, "site") && !TRAP.field_is(1, "kind") && !TRAP.field_is(3, "pc"));
    }
}
