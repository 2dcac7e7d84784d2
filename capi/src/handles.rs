//! The handle table: every object the C caller holds is an entry here, and
//! the "pointer" it holds is an encoded (slot, generation, type) triple, not
//! an address. A handle used after free, freed twice, of the wrong type or
//! made up is detected in every build (the slot's generation moved on, the
//! type bits differ, or the slot does not exist), never dereferenced.
//!
//! Encoding (64 bits): `generation << 32 | type << 24 | (slot + 1)`.
//! Generations start at 1 and grow on every free; a slot whose generation
//! would wrap is retired instead of reused. Up to 2^24 − 2 live handles.

use crate::error::{Error, Result, GL_ERR_HANDLE};
use crate::state::{CodeState, FuncState, ModuleState, ReportList, RtState};
use std::sync::{Arc, Mutex, MutexGuard};

/// The kinds of handle (the `type` bits of the encoding).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Module = 1,
    Runtime = 2,
    Code = 3,
    Func = 4,
    Reports = 5,
}

impl Kind {
    fn from_bits(b: u64) -> Option<Kind> {
        Some(match b {
            1 => Kind::Module,
            2 => Kind::Runtime,
            3 => Kind::Code,
            4 => Kind::Func,
            5 => Kind::Reports,
            _ => return None,
        })
    }
    pub fn c_name(self) -> &'static str {
        match self {
            Kind::Module => "gl_module",
            Kind::Runtime => "gl_runtime",
            Kind::Code => "gl_code",
            Kind::Func => "gl_func",
            Kind::Reports => "gl_reports",
        }
    }
}

/// What a live handle refers to. Each is an `Arc` so that a call can use
/// the object without holding the table's lock (compiled code may call back
/// into the API from a report callback).
#[derive(Clone)]
pub(crate) enum Object {
    Module(Arc<Mutex<ModuleState>>),
    Runtime(Arc<RtState>),
    Code(Arc<CodeState>),
    Func(Arc<FuncState>),
    Reports(Arc<ReportList>),
}

impl Object {
    fn kind(&self) -> Kind {
        match self {
            Object::Module(_) => Kind::Module,
            Object::Runtime(_) => Kind::Runtime,
            Object::Code(_) => Kind::Code,
            Object::Func(_) => Kind::Func,
            Object::Reports(_) => Kind::Reports,
        }
    }
}

struct Slot {
    generation: u32,
    obj: Option<Object>,
}

struct Table {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    slots: Vec::new(),
    free: Vec::new(),
});

const SLOT_BITS: u32 = 24;
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;
const MAX_SLOTS: usize = (SLOT_MASK - 1) as usize;

fn table() -> MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

fn encode(slot: u32, generation: u32, kind: Kind) -> u64 {
    ((generation as u64) << 32) | ((kind as u64) << SLOT_BITS) | (slot as u64 + 1)
}

/// Enters `obj` in the table and returns its handle.
pub(crate) fn insert(obj: Object) -> Result<u64> {
    let kind = obj.kind();
    let mut t = table();
    let slot = match t.free.pop() {
        Some(s) => s,
        None => {
            if t.slots.len() >= MAX_SLOTS {
                return Err(Error::new(
                    GL_ERR_HANDLE,
                    "too many live guardlift handles (free some)",
                ));
            }
            t.slots.push(Slot {
                generation: 1,
                obj: None,
            });
            (t.slots.len() - 1) as u32
        }
    };
    let s = &mut t.slots[slot as usize];
    s.obj = Some(obj);
    Ok(encode(slot, s.generation, kind))
}

/// Why a handle is not a live handle of kind `want`.
fn describe(t: &Table, h: u64, want: Kind) -> Result<usize> {
    let bad = |what: String| {
        Err(Error::new(
            GL_ERR_HANDLE,
            format!("{what} (handle {h:#x}, expected a live {})", want.c_name()),
        ))
    };
    let low = h & SLOT_MASK;
    let kind = Kind::from_bits((h >> SLOT_BITS) & 0xff);
    let generation = (h >> 32) as u32;
    let (Some(kind), true) = (kind, low != 0) else {
        return bad("not a guardlift handle".into());
    };
    let slot = (low - 1) as usize;
    let Some(s) = t.slots.get(slot) else {
        return bad("not a guardlift handle".into());
    };
    if kind != want {
        return bad(format!(
            "a {} passed where a {} was expected",
            kind.c_name(),
            want.c_name()
        ));
    }
    if generation == 0 || generation > s.generation {
        return bad("not a guardlift handle".into());
    }
    if generation < s.generation || s.obj.is_none() {
        return bad(format!(
            "{} used after it was freed (or freed twice)",
            kind.c_name()
        ));
    }
    Ok(slot)
}

/// The object behind a live handle of kind `want`.
pub(crate) fn get(h: u64, want: Kind) -> Result<Object> {
    let t = table();
    let slot = describe(&t, h, want)?;
    Ok(t.slots[slot].obj.clone().expect("live slot"))
}

/// Removes a live handle of kind `want` from the table and returns its
/// object (the caller drops it outside the table lock).
pub(crate) fn remove(h: u64, want: Kind) -> Result<Object> {
    let mut t = table();
    let slot = describe(&t, h, want)?;
    let s = &mut t.slots[slot];
    let obj = s.obj.take().expect("live slot");
    if s.generation == u32::MAX {
        // Retired: reusing the slot would let a stale handle match again.
    } else {
        s.generation += 1;
        t.free.push(slot as u32);
    }
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::ReportList;

    fn reports() -> Object {
        Object::Reports(Arc::new(ReportList::default()))
    }

    #[test]
    fn stale_double_and_foreign_handles_are_detected() {
        let a = insert(reports()).unwrap();
        assert!(get(a, Kind::Reports).is_ok());
        assert_eq!(get(a, Kind::Code).err().unwrap().code, GL_ERR_HANDLE);
        assert!(remove(a, Kind::Reports).is_ok());
        let e = remove(a, Kind::Reports).err().unwrap();
        assert!(e.msg.contains("freed"), "{}", e.msg);
        // The slot is reused with a new generation: the old handle stays dead.
        let b = insert(reports()).unwrap();
        assert_ne!(a, b);
        assert!(get(a, Kind::Reports).is_err());
        assert!(get(b, Kind::Reports).is_ok());
        assert!(get(0, Kind::Reports).is_err());
        assert!(get(0xdead_beef_0000, Kind::Reports).is_err());
        assert!(get(u64::MAX, Kind::Reports).is_err());
        remove(b, Kind::Reports).unwrap();
    }
}
