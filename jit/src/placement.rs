//! Where the JIT maps its code and data: by default wherever the OS puts
//! cranelift-jit's mappings ([`Placement::System`]); for tests and for
//! checking an embedding, forced close together or far apart around the
//! runtime's shadow reservation (`guardlift_runtime::shadow`), chosen by
//! [`crate::CompileOptions::placement`] or the environment variable
//! `GUARDLIFT_JIT_PLACEMENT` (docs/EMBEDDING.md).
//!
//! Generated code must not depend on where its pieces land
//! (docs/CODEGEN.md, "Relocations"): every reference from code to a data
//! object or to another function is an absolute address. The placements
//! here make the cases that used to break reproducible: code and data
//! more than 4 GiB apart, with the data above or below the code and the
//! 32 TiB shadow mapping (and its guards) between them.
//!
//! A `PlacedMemory` reserves a chunk per kind of memory (code, writable
//! data, read-only data: `MAP_NORESERVE`, read-write) at an address chosen
//! from the gaps of `/proc/self/maps` (`MAP_FIXED_NOREPLACE`: an address
//! taken since is never overwritten, the search starts again), hands out
//! pieces of it in order, and gives the pieces allocated since the last
//! [`JITMemoryProvider::finalize`] their final protection (a later
//! allocation starts on a fresh page). Live chunks are listed by
//! [`placed_chunks`], so that tests can check where they went.

use crate::error::JitError;
use cranelift_jit::{BranchProtection, JITMemoryKind, JITMemoryProvider};
use cranelift_module::{ModuleError, ModuleResult};
use std::io;
use std::sync::Mutex;

/// The environment variable that chooses the placement when
/// [`crate::CompileOptions::placement`] is unset.
pub const PLACEMENT_ENV: &str = "GUARDLIFT_JIT_PLACEMENT";

/// Bytes reserved per chunk (more when one allocation needs it).
const CHUNK: usize = 32 << 20;
/// Free space kept between a chunk and its neighbours.
const MARGIN: usize = 1 << 20;
/// Without a shadow mapping, the far placements split the address space
/// at an address the OS picks and keep this much between the sides.
const FAR_GAP: usize = 8 << 30;

/// Where a compiled module's code and data go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Placement {
    /// Wherever the OS maps cranelift-jit's memory (its system provider).
    #[default]
    System,
    /// Code, writable and read-only data in one reservation, side by side.
    Near,
    /// Code below the shadow mapping, data above it (without a shadow:
    /// more than 4 GiB above the code).
    CodeLow,
    /// Code above the shadow mapping, data below it.
    CodeHigh,
}

impl Placement {
    /// Every placement, in the order of their names.
    pub const ALL: [Placement; 4] = [
        Placement::System,
        Placement::Near,
        Placement::CodeLow,
        Placement::CodeHigh,
    ];

    /// The name `GUARDLIFT_JIT_PLACEMENT` spells it with.
    pub fn name(self) -> &'static str {
        match self {
            Placement::System => "system",
            Placement::Near => "near",
            Placement::CodeLow => "code-low",
            Placement::CodeHigh => "code-high",
        }
    }

    /// The placement named `s`.
    pub fn parse(s: &str) -> Result<Self, JitError> {
        (Self::ALL.into_iter().find(|p| p.name() == s)).ok_or_else(|| JitError::Runtime {
            context: format!(
                "{PLACEMENT_ENV}={s}: not a placement (system, near, code-low, code-high)"
            ),
            source: io::Error::new(io::ErrorKind::InvalidInput, "unknown placement"),
        })
    }

    /// The placement `GUARDLIFT_JIT_PLACEMENT` asks for (unset or empty:
    /// [`Placement::System`]).
    pub fn from_env() -> Result<Self, JitError> {
        match std::env::var(PLACEMENT_ENV) {
            Ok(s) if !s.is_empty() => Self::parse(&s),
            _ => Ok(Placement::System),
        }
    }

    /// The memory provider of this placement (`None`: cranelift-jit's own).
    pub(crate) fn provider(self) -> Option<PlacedMemory> {
        (self != Placement::System).then(|| PlacedMemory::new(self))
    }
}

/// What a chunk holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkKind {
    /// Code (read-execute once finalized).
    Code,
    /// Writable data.
    Data,
    /// Read-only data.
    ReadOnly,
}

/// One live chunk of a `PlacedMemory`: (kind, start address, length).
pub type PlacedChunk = (ChunkKind, usize, usize);

/// Every live chunk of every [`PlacedMemory`] of the process.
static CHUNKS: Mutex<Vec<PlacedChunk>> = Mutex::new(Vec::new());

/// The live chunks of every placed module of the process, in mapping order.
pub fn placed_chunks() -> Vec<PlacedChunk> {
    CHUNKS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The chunks of one kind and the position in the last one.
#[derive(Default)]
struct Arena {
    /// (start, length) of each chunk, the last one current.
    chunks: Vec<(usize, usize)>,
    /// Next free offset in the current chunk.
    pos: usize,
    /// Pieces allocated since the last finalize: (start, length).
    pending: Vec<(usize, usize)>,
}

/// A cranelift-jit memory provider that places code and data as its
/// [`Placement`] says.
pub(crate) struct PlacedMemory {
    placement: Placement,
    /// Code, writable data, read-only data.
    arenas: [Arena; 3],
}

fn page() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

fn align_up(x: usize, a: usize) -> usize {
    (x + a - 1) & !(a - 1)
}

/// The mapped ranges of the process, sorted: (start, end).
fn mappings() -> io::Result<Vec<(usize, usize)>> {
    let text = std::fs::read_to_string("/proc/self/maps")?;
    let mut out: Vec<(usize, usize)> = (text.lines())
        .filter_map(|l| {
            let (range, _) = l.split_once(' ')?;
            let (s, e) = range.split_once('-')?;
            Some((
                usize::from_str_radix(s, 16).ok()?,
                usize::from_str_radix(e, 16).ok()?,
            ))
        })
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// The free ranges of user address space (below 2^47), ascending.
fn gaps() -> io::Result<Vec<(usize, usize)>> {
    const LOW: usize = 1 << 32;
    const TOP: usize = 1 << 47;
    let mut out = Vec::new();
    let mut at = LOW;
    for (s, e) in mappings()? {
        if s > at {
            out.push((at, s.min(TOP)));
        }
        at = at.max(e);
    }
    if at < TOP {
        out.push((at, TOP));
    }
    Ok(out.into_iter().filter(|(s, e)| s < e).collect())
}

/// Where a chunk may go.
#[derive(Clone, Copy)]
enum Side {
    /// As high as possible, ending at or below this address.
    Below(usize),
    /// As low as possible, starting at or above this address.
    Above(usize),
    /// Wherever the OS puts it.
    Anywhere,
}

/// The two sides the far placements split the address space into: the
/// shadow mapping's start and end, or an address the OS picks and
/// [`FAR_GAP`] above it.
fn split() -> io::Result<(usize, usize)> {
    if let Some(base) = guardlift_runtime::shadow::base() {
        let base = base as usize;
        if let Some(&(s, e)) = mappings()?.iter().find(|&&(s, e)| s <= base && base < e) {
            return Ok((s, e));
        }
    }
    let probe = map_at(None, page())?;
    // SAFETY: `probe` was just mapped with this length and holds nothing.
    unsafe { libc::munmap(probe as *mut libc::c_void, page()) };
    Ok((probe, probe + FAR_GAP))
}

/// Maps `len` bytes read-write, `MAP_NORESERVE`, at `at` exactly (never
/// replacing a mapping) or where the OS likes.
fn map_at(at: Option<usize>, len: usize) -> io::Result<usize> {
    let flags = libc::MAP_PRIVATE
        | libc::MAP_ANONYMOUS
        | libc::MAP_NORESERVE
        | at.map_or(0, |_| libc::MAP_FIXED_NOREPLACE);
    // SAFETY: an anonymous mapping; MAP_FIXED_NOREPLACE never replaces an
    // existing mapping.
    let p = unsafe {
        libc::mmap(
            at.unwrap_or(0) as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    if at.is_some_and(|a| a != p as usize) {
        // A kernel without MAP_FIXED_NOREPLACE takes it as a hint.
        // SAFETY: `p` was just mapped with this length.
        unsafe { libc::munmap(p, len) };
        return Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            "hint not honoured",
        ));
    }
    Ok(p as usize)
}

/// Maps a chunk of `len` bytes on `side`.
fn map_chunk(side: Side, len: usize) -> io::Result<usize> {
    let mut last = None;
    for _ in 0..8 {
        let at = match side {
            Side::Anywhere => return map_at(None, len),
            Side::Below(limit) => (gaps()?.into_iter().rev())
                .filter(|&(s, e)| s < limit && e.min(limit) - s >= len + 2 * MARGIN)
                .map(|(_, e)| e.min(limit) - MARGIN - len)
                .next(),
            Side::Above(limit) => (gaps()?.into_iter())
                .filter(|&(s, e)| e > limit && e - s.max(limit) >= len + 2 * MARGIN)
                .map(|(s, _)| s.max(limit) + MARGIN)
                .next(),
        };
        let Some(at) = at else {
            return Err(io::Error::new(
                io::ErrorKind::OutOfMemory,
                "no free range on that side of the address space",
            ));
        };
        match map_at(Some(at & !(page() - 1)), len) {
            Ok(p) => return Ok(p),
            // Taken meanwhile (another thread): look again.
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no chunk")))
}

impl PlacedMemory {
    fn new(placement: Placement) -> Self {
        PlacedMemory {
            placement,
            arenas: Default::default(),
        }
    }

    /// The side a new chunk of arena `k` (0 code, 1 data, 2 read-only) goes to.
    fn side(&self, k: usize) -> io::Result<Side> {
        let code = k == 0;
        Ok(match self.placement {
            Placement::System | Placement::Near => Side::Anywhere,
            Placement::CodeLow | Placement::CodeHigh => {
                let (lo, hi) = split()?;
                match (self.placement == Placement::CodeLow) == code {
                    true => Side::Below(lo),
                    false => Side::Above(hi),
                }
            }
        })
    }

    /// Makes room for `size` bytes aligned to `align` in arena `k`.
    fn reserve(&mut self, k: usize, size: usize, align: usize) -> io::Result<()> {
        let fits = (self.arenas[k].chunks.last())
            .is_some_and(|&(_, len)| align_up(self.arenas[k].pos, align) + size <= len);
        if fits {
            return Ok(());
        }
        if self.placement == Placement::Near && self.arenas.iter().all(|a| a.chunks.is_empty()) {
            // The first chunks of all three kinds: one mapping, side by side.
            let base = map_chunk(Side::Anywhere, 3 * CHUNK)?;
            let mut chunks = CHUNKS.lock().unwrap_or_else(|e| e.into_inner());
            for (i, a) in self.arenas.iter_mut().enumerate() {
                a.chunks.push((base + i * CHUNK, CHUNK));
                a.pos = 0;
                chunks.push((kind_of(i), base + i * CHUNK, CHUNK));
            }
            drop(chunks);
            return self.reserve(k, size, align);
        }
        let len = align_up(size.max(CHUNK), page());
        let side = self.side(k)?;
        let at = map_chunk(side, len)?;
        self.arenas[k].chunks.push((at, len));
        self.arenas[k].pos = 0;
        (CHUNKS.lock().unwrap_or_else(|e| e.into_inner())).push((kind_of(k), at, len));
        Ok(())
    }
}

fn kind_of(k: usize) -> ChunkKind {
    [ChunkKind::Code, ChunkKind::Data, ChunkKind::ReadOnly][k]
}

impl JITMemoryProvider for PlacedMemory {
    fn allocate(&mut self, size: usize, align: u64, kind: JITMemoryKind) -> io::Result<*mut u8> {
        let k = match kind {
            JITMemoryKind::Executable => 0,
            JITMemoryKind::Writable => 1,
            JITMemoryKind::ReadOnly => 2,
        };
        let align = (align as usize).max(16);
        if !align.is_power_of_two() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "alignment"));
        }
        let size = size.max(1);
        self.reserve(k, size, align)?;
        let a = &mut self.arenas[k];
        let (start, _) = *a
            .chunks
            .last()
            .ok_or_else(|| io::Error::other("no chunk"))?;
        let at = start + align_up(a.pos, align);
        a.pos = at - start + size;
        a.pending.push((at, size));
        Ok(at as *mut u8)
    }

    unsafe fn free_memory(&mut self) {
        let mut chunks = CHUNKS.lock().unwrap_or_else(|e| e.into_inner());
        for a in &mut self.arenas {
            for &(start, len) in &a.chunks {
                chunks.retain(|&(_, s, _)| s != start);
                // SAFETY: the chunk was mapped by `map_at` with this length;
                // the caller guarantees that nothing uses it any more.
                unsafe { libc::munmap(start as *mut libc::c_void, len) };
            }
            *a = Arena::default();
        }
    }

    fn finalize(&mut self, _branch_protection: BranchProtection) -> ModuleResult<()> {
        let page = page();
        for (k, prot) in [(0, libc::PROT_READ | libc::PROT_EXEC), (2, libc::PROT_READ)] {
            for (at, size) in std::mem::take(&mut self.arenas[k].pending) {
                let start = at & !(page - 1);
                let end = align_up(at + size, page);
                // SAFETY: the pages belong to a chunk of this arena, hold
                // only pieces handed out for this kind (a piece after a
                // finalize starts on a fresh page), and nothing writes them
                // once finalized.
                let r = unsafe { libc::mprotect(start as *mut libc::c_void, end - start, prot) };
                if r != 0 {
                    let err = io::Error::last_os_error();
                    return Err(ModuleError::Allocation { err });
                }
                #[cfg(target_arch = "aarch64")]
                if k == 0 {
                    // SAFETY: the range was just written and made executable.
                    unsafe {
                        wasmtime_jit_icache_coherence::clear_cache(
                            start as *const libc::c_void,
                            end - start,
                        )
                    }
                    .map_err(|err| ModuleError::Allocation { err })?;
                }
            }
            let a = &mut self.arenas[k];
            a.pos = align_up(a.pos, page);
        }
        self.arenas[1].pending.clear();
        #[cfg(target_arch = "aarch64")]
        wasmtime_jit_icache_coherence::pipeline_flush_mt()
            .map_err(|err| ModuleError::Allocation { err })?;
        Ok(())
    }
}
