//! One adstack's buffer as the interpreter keeps it: the count header and
//! the entries, laid out by `guardlift_runtime::adstack` as compiled code
//! lays them out. A leaf: frames hold these buffers ([`crate::frame`]) and
//! the `adstack.*` instructions work on them ([`crate::adstack`]).

use guardlift_runtime::adstack::{self, AdElem};

/// One adstack's buffer: the u64 count header, then its entries.
pub(crate) struct AdBuf {
    pub(crate) mem: Vec<u8>,
    pub(crate) elem: AdElem,
    pub(crate) cap: u32,
}

impl AdBuf {
    pub(crate) fn new(elem: AdElem, cap: u32) -> Self {
        AdBuf {
            mem: vec![0; adstack::buffer_bytes(elem, cap) as usize],
            elem,
            cap,
        }
    }
    pub(crate) fn rd(&self, off: u64, bytes: u32) -> u64 {
        let o = off as usize;
        match bytes {
            4 => u32::from_ne_bytes(self.mem[o..o + 4].try_into().unwrap_or([0; 4])) as u64,
            _ => u64::from_ne_bytes(self.mem[o..o + 8].try_into().unwrap_or([0; 8])),
        }
    }
    pub(crate) fn wr(&mut self, off: u64, bytes: u32, v: u64) {
        let o = off as usize;
        match bytes {
            4 => self.mem[o..o + 4].copy_from_slice(&(v as u32).to_ne_bytes()),
            _ => self.mem[o..o + 8].copy_from_slice(&v.to_ne_bytes()),
        }
    }
    pub(crate) fn len(&self) -> u64 {
        self.rd(adstack::ADSTACK_COUNT_OFFSET as u64, 8)
    }
    pub(crate) fn set_len(&mut self, n: u64) {
        self.wr(adstack::ADSTACK_COUNT_OFFSET as u64, 8, n)
    }
}
