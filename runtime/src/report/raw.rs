//! The raw fields of a report that are text in [`super::Report`]: who last
//! wrote a dict slot, as a code. An object target's runtime sends codes
//! (`aot/src/protocol.rs`, the `R` line) and the host makes the text.

use super::LastWrite;
use crate::heap::BY_OBJ_NEW;

/// Who last wrote a dict slot, as the target protocol codes it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LastWriteCode {
    /// No write recorded.
    None = 0,
    /// `obj_new` stored the values word.
    ObjNew = 1,
    /// The model heap's dict code stored a dict.
    DictCode = 2,
    /// Instrumented code (`gl_note_slot_write`) at a site.
    Site = 3,
}

impl LastWriteCode {
    /// Every code, in code order.
    pub const ALL: [LastWriteCode; 4] = [
        LastWriteCode::None,
        LastWriteCode::ObjNew,
        LastWriteCode::DictCode,
        LastWriteCode::Site,
    ];

    /// The code of a recorded last write: an instrumented writer has a
    /// site; the heap's own writers are `obj_new` and its dict code.
    pub fn of(w: Option<&LastWrite>) -> LastWriteCode {
        match w {
            None => LastWriteCode::None,
            Some(w) if w.site.is_some() => LastWriteCode::Site,
            Some(w) if w.by == BY_OBJ_NEW => LastWriteCode::ObjNew,
            Some(_) => LastWriteCode::DictCode,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heap::Heap;
    use crate::layout::DictLayout;

    #[test]
    fn the_heaps_writers_have_their_codes() {
        let mut h = Heap::new(DictLayout::Phoenix);
        let o = h.obj_new(1).unwrap();
        let slot = DictLayout::Phoenix.slot_addr(o);
        assert_eq!(
            LastWriteCode::of(h.last_write(slot).as_ref()),
            LastWriteCode::ObjNew
        );
        h.obj_dictify(o).unwrap();
        assert_eq!(
            LastWriteCode::of(h.last_write(slot).as_ref()),
            LastWriteCode::DictCode
        );
        h.note_write(o, "dict_slot.store at @f 1:1 (site 3)", Some(3), 5);
        assert_eq!(
            LastWriteCode::of(h.last_write(slot).as_ref()),
            LastWriteCode::Site
        );
        assert_eq!(LastWriteCode::of(None), LastWriteCode::None);
    }
}
