//! The runtime's table of guard sites, stored sparsely per module.
//!
//! Each registered module gets a range `[base, base + span)` of
//! runtime-global site ids, `span` = its largest local id + 1, so that
//! generated code computes a global id as `base + local` (a constant).
//! Only the sites that exist are stored: memory is proportional to the
//! number of sites, never to an id (a module whose only site is
//! `!site(4000000000, …)` costs one entry). A module's sites go when it
//! unregisters ([`SiteTable::unregister`]; engines do it when the compiled
//! module or interpreter is dropped).
//!
//! Ranges are allocated next-fit: after the most recently allocated range,
//! wrapping around to the lowest free gap only when the end of the id space
//! is reached, so the ids of a dropped module are reused as late as possible
//! (reports already recorded keep their own copy of the site's info).

use crate::report::SiteInfo;
use std::collections::BTreeMap;

pub use guardlift_abi::ModuleSites;

/// The id space has no free range large enough for a module's sites.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "no room for {span} site ids in the runtime (largest local site id {}; \
     {registered} module(s) registered): use smaller `!site` ids or fewer live modules",
    span - 1
)]
pub struct SiteSpaceFull {
    /// The ids the module needed (largest local id + 1).
    pub span: u64,
    /// Modules registered at the time.
    pub registered: usize,
}

struct Entry {
    /// Largest local id + 1 (at least 1, so ranges never coincide).
    span: u64,
    sites: ModuleSites,
}

/// Every live module's sites, keyed by the module's base.
#[derive(Default)]
pub struct SiteTable {
    modules: BTreeMap<u32, Entry>,
    /// Where the next-fit search starts.
    cursor: u64,
    /// Sites stored, over every module.
    count: usize,
}

/// One past the largest global id.
const ID_SPACE: u64 = 1 << 32;

impl SiteTable {
    /// Stores a module's sites; returns its base (global = base + local).
    pub fn register(&mut self, sites: ModuleSites) -> Result<u32, SiteSpaceFull> {
        let span = sites.keys().next_back().map_or(1, |&m| u64::from(m) + 1);
        let base = self
            .find_gap(self.cursor, span)
            .or_else(|| self.find_gap(0, span))
            .ok_or(SiteSpaceFull {
                span,
                registered: self.modules.len(),
            })?;
        self.cursor = base + span;
        self.count += sites.len();
        let base = u32::try_from(base).unwrap_or(u32::MAX);
        self.modules.insert(base, Entry { span, sites });
        Ok(base)
    }

    /// The lowest base `>= from` whose range of `span` ids is free.
    fn find_gap(&self, from: u64, span: u64) -> Option<u64> {
        let mut start = from;
        let below = u32::try_from(from).ok().and_then(|f| {
            self.modules
                .range(..=f)
                .next_back()
                .map(|(&b, e)| u64::from(b) + e.span)
        });
        if let Some(end) = below {
            start = start.max(end);
        }
        let first_after = u32::try_from(start).unwrap_or(u32::MAX);
        for (&b, e) in self.modules.range(first_after..) {
            let b = u64::from(b);
            if b >= start && b - start >= span {
                break;
            }
            start = start.max(b + e.span);
        }
        (start + span <= ID_SPACE).then_some(start)
    }

    /// Forgets the sites of the module registered at `base` (no-op if none).
    pub fn unregister(&mut self, base: u32) {
        if let Some(e) = self.modules.remove(&base) {
            self.count -= e.sites.len();
        }
    }

    /// The site with runtime-global id `site`, if a live module has it.
    pub fn get(&self, site: u32) -> Option<&SiteInfo> {
        let (&base, e) = self.modules.range(..=site).next_back()?;
        let local = site - base;
        if u64::from(local) >= e.span {
            return None;
        }
        e.sites.get(&local)
    }

    /// Sites stored, over every live module.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Are no sites stored?
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Modules registered and not yet unregistered.
    pub fn modules(&self) -> usize {
        self.modules.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(op: &str) -> SiteInfo {
        SiteInfo {
            function: "f".into(),
            line: 1,
            col: 1,
            op: op.into(),
        }
    }

    fn sites(ids: &[u32]) -> ModuleSites {
        ids.iter().map(|&i| (i, info(&format!("op{i}")))).collect()
    }

    #[test]
    fn huge_ids_cost_one_entry_and_map_back() {
        let mut t = SiteTable::default();
        let b = t.register(sites(&[u32::MAX])).unwrap();
        assert_eq!(b, 0);
        assert_eq!(t.len(), 1);
        assert_eq!(t.get(u32::MAX).unwrap().op, format!("op{}", u32::MAX));
        assert!(t.get(7).is_none());
        // The whole space is taken: a second module is an error, not a wrap.
        let e = t.register(sites(&[0])).unwrap_err();
        assert_eq!(e.span, 1);
        t.unregister(b);
        assert!(t.is_empty());
        assert_eq!(t.register(sites(&[0, 3])).unwrap(), 0);
    }

    #[test]
    fn ranges_do_not_overlap_and_are_reused_late() {
        let mut t = SiteTable::default();
        let a = t.register(sites(&[0, 1, 2])).unwrap();
        let b = t.register(sites(&[0, 9])).unwrap();
        let c = t.register(ModuleSites::new()).unwrap();
        assert_eq!((a, b, c), (0, 3, 13));
        assert_eq!(t.get(b + 9).unwrap().op, "op9");
        assert_eq!(t.get(a + 2).unwrap().op, "op2");
        assert!(t.get(b + 5).is_none());
        t.unregister(a);
        assert!(t.get(a + 2).is_none());
        // Next fit: after the last range, not in a's hole.
        assert_eq!(t.register(sites(&[0])).unwrap(), 14);
        assert_eq!((t.len(), t.modules()), (3, 3));
        // A module that only fits before the cursor wraps to the first gap.
        let big = t.register(sites(&[u32::MAX - 5])).unwrap_err();
        assert_eq!(big.registered, 3);
        t.unregister(b);
        t.unregister(c);
        t.unregister(14);
        assert_eq!(t.register(sites(&[u32::MAX - 5])).unwrap(), 0);
    }
}
