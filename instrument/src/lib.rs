//! The instrumentation pass (spec §6): IR → IR.
//!
//! For a [`CheckSet`], every instruction the set covers becomes guarded: it
//! gets a [`SiteId`] whose [`Site`] remembers the function, the source
//! position, the opcode of the instruction as written and which of the
//! set's checks apply to it (spec §6: load_attr/store_attr: lifetime, dict,
//! bounds; dict_slot.*: lifetime, dict; load: lifetime; store: lifetime,
//! clobber; adstack ops: adstack; `call @obj_free`: lifetime). A
//! `call @obj_new` gets a site whenever an object check (lifetime, dict,
//! bounds, clobber) is on, so the runtime can record the allocation site
//! (nothing is checked there). Ids are stable:
//! they are numbered in program order (functions, then blocks, then
//! instructions), after any site the input already had. With the `clobber`
//! check, each object whose dict slot instrumented code touches is
//! registered with the watch list (`guard.watch`) before the touching op.
//!
//! The pass never changes what an instruction computes; the guard's meaning
//! (check, report, recover effect) belongs to the engines. Instrumented IR
//! prints, parses and verifies like any IR.

use guardlift_ir::{CheckKind, Checks, Inst, InstKind, Module, Site, SiteId, Value, Verified};
use std::collections::HashSet;
use std::fmt;

/// Which checks to insert.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct CheckSet {
    /// `dict`: the managed-dict word's tag.
    pub dict: bool,
    /// `adstack`: capacity and emptiness.
    pub adstack: bool,
    /// `clobber`: raw stores over watched slots (and `guard.watch`).
    pub clobber: bool,
    /// `bounds`: attribute index against the values array's capacity.
    pub bounds: bool,
    /// `lifetime`: accesses to freed objects, double and invalid frees.
    pub lifetime: bool,
}

/// A `--checks` list that names an unknown check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown check `{0}` (expected lifetime, dict, bounds, adstack, clobber)")]
pub struct UnknownCheck(pub String);

impl CheckSet {
    /// No check (usable in `const` items: `CheckSet { dict: true, ..CheckSet::NONE }`).
    pub const NONE: CheckSet = CheckSet {
        dict: false,
        adstack: false,
        clobber: false,
        bounds: false,
        lifetime: false,
    };

    /// Every check (`--instrument`).
    pub const ALL: CheckSet = CheckSet {
        dict: true,
        adstack: true,
        clobber: true,
        bounds: true,
        lifetime: true,
    };

    /// Parses `lifetime,dict,bounds,adstack,clobber` (any subset, any order).
    pub fn parse(list: &str) -> Result<Self, UnknownCheck> {
        let mut s = CheckSet::default();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match CheckKind::from_name(name) {
                Some(k) => s.insert(k),
                None => return Err(UnknownCheck(name.to_string())),
            }
        }
        Ok(s)
    }

    /// Adds check `k`.
    pub fn insert(&mut self, k: CheckKind) {
        match k {
            CheckKind::Dict => self.dict = true,
            CheckKind::Adstack => self.adstack = true,
            CheckKind::Clobber => self.clobber = true,
            CheckKind::Bounds => self.bounds = true,
            CheckKind::Lifetime => self.lifetime = true,
        }
    }

    /// Is check `k` in the set?
    pub fn contains(&self, k: CheckKind) -> bool {
        match k {
            CheckKind::Dict => self.dict,
            CheckKind::Adstack => self.adstack,
            CheckKind::Clobber => self.clobber,
            CheckKind::Bounds => self.bounds,
            CheckKind::Lifetime => self.lifetime,
        }
    }

    /// Is no check in the set?
    pub fn is_empty(&self) -> bool {
        self.checks().is_empty()
    }

    /// The set as the IR's [`Checks`] bitset.
    pub fn checks(&self) -> Checks {
        CheckKind::ALL
            .into_iter()
            .filter(|k| self.contains(*k))
            .collect()
    }
}

impl fmt::Display for CheckSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = CheckKind::ALL
            .into_iter()
            .filter(|k| self.contains(*k))
            .map(|k| k.name())
            .collect();
        f.write_str(&names.join(","))
    }
}

/// Returns `m` with guards for `checks` inserted.
pub fn instrument(m: &Module, checks: CheckSet) -> Module {
    instrument_owned(m.clone(), checks)
}

/// [`instrument_owned`] of a verified module, the result verified too:
/// instrumentation keeps a valid module valid, so nothing verifies it
/// again (the JIT compiles a [`Verified`] module as it is).
pub fn instrument_verified(m: Verified, checks: CheckSet) -> Verified {
    let out = instrument_owned(m.into_module(), checks);
    // SAFETY: a guard is an instruction of a valid form on a value the
    // checked instruction uses, at that instruction (and a `guard.watch`
    // on a block's object, before its first use there): a module that
    // verified still does. Pinned by the golden tests (tests/golden.rs:
    // every output verifies), the `parse` fuzz target (each input's
    // instrumented module, every check set, verifies) and the
    // `differential` one (its modules go through `Jit::compile`, which
    // verifies); debug builds verify here.
    unsafe { Verified::new_unchecked(out) }
}

/// [`instrument`] of a module the caller no longer needs: the guards are
/// inserted into `m` itself, so the pass allocates nothing per instruction
/// and holds one copy of the module at a time, not two (a block is rebuilt
/// only when it gets a `guard.watch`). The result is the same as
/// [`instrument`]'s.
pub fn instrument_owned(mut m: Module, checks: CheckSet) -> Module {
    let want = checks.checks();
    // Fresh ids follow the largest existing one, wrapping past u32::MAX to
    // the lowest unused id (a hand-written `!site(4294967295, ...)`): never
    // an id that is already taken.
    let next = m
        .sites
        .keys()
        .next_back()
        .map_or(0, |s| s.0.wrapping_add(1));
    // The functions are taken out while their instructions change: which
    // checks apply to a call depends on the module's externs only.
    let mut functions = std::mem::take(&mut m.functions);
    let mut sites = Sites {
        m: &mut m,
        next,
        want,
    };
    for (fi, f) in functions.iter_mut().enumerate() {
        let func = guardlift_ir::FuncId(fi as u32);
        for b in &mut f.blocks {
            let watches = checks.clobber && b.insts.iter().any(|i| i.kind.dict_obj().is_some());
            if !watches {
                for inst in &mut b.insts {
                    sites.guard(func, inst);
                }
                continue;
            }
            let mut insts = Vec::with_capacity(b.insts.len());
            let mut watched: HashSet<Value> = HashSet::new();
            for mut inst in std::mem::take(&mut b.insts) {
                if let Some(obj) = inst.kind.dict_obj() {
                    let is_watch = matches!(inst.kind, InstKind::Watch { .. });
                    if watched.insert(obj) && !is_watch {
                        insts.push(Inst {
                            kind: InstKind::Watch { obj },
                            result: None,
                            loc: inst.loc,
                            site: None,
                        });
                    }
                }
                sites.guard(func, &mut inst);
                insts.push(inst);
            }
            b.insts = insts;
        }
    }
    m.functions = functions;
    m
}

/// The site numbering of one [`instrument_owned`] run.
struct Sites<'m> {
    /// The module being instrumented (its functions taken out).
    m: &'m mut Module,
    /// The next id to try.
    next: u32,
    /// The checks to insert.
    want: Checks,
}

impl Sites<'_> {
    /// Gives `inst` (of function `func`) a fresh site with the checks that
    /// apply to it, unless it has one already or none applies.
    fn guard(&mut self, func: guardlift_ir::FuncId, inst: &mut Inst) {
        let on = self.m.applicable_checks(&inst.kind).intersect(self.want);
        if inst.site.is_some() || on.is_empty() {
            return;
        }
        while self.m.sites.contains_key(&SiteId(self.next)) {
            self.next = self.next.wrapping_add(1);
        }
        let id = SiteId(self.next);
        self.next = self.next.wrapping_add(1);
        self.m.sites.insert(
            id,
            Site {
                func,
                loc: inst.loc,
                op: inst.kind.opcode(),
                checks: on,
            },
        );
        inst.site = Some(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inserting `guard.watch` before a use leaves every value's recorded
    /// definition as it was (definitions name a block, not a position) and
    /// the result verifies.
    #[test]
    fn inserted_watches_renumber_nothing() {
        let m = guardlift_ir::parse_and_verify(
            "extern fn @obj_new(i64) -> ptr
fn @main() -> i64 {
entry:
    %n = iconst.i64 1
    %o = call @obj_new(%n)
    %a = load_attr %o, 0
    %b = load_attr %o, 1
    %c = iadd %a, %b
    return %c
}",
        )
        .expect("valid");
        let out = instrument(&m, CheckSet::ALL);
        let insts = &out.functions[0].blocks[0].insts;
        assert!(matches!(insts[2].kind, InstKind::Watch { .. }));
        assert_eq!(insts.len(), m.functions[0].blocks[0].insts.len() + 1);
        assert_eq!(out.functions[0].values, m.functions[0].values);
        guardlift_ir::verify_module(&out).expect("instrumented module verifies");
    }

    #[test]
    fn parses_check_lists() {
        assert_eq!(
            CheckSet::parse("dict,adstack,clobber,bounds,lifetime").unwrap(),
            CheckSet::ALL
        );
        assert_eq!(
            CheckSet::parse("adstack").unwrap(),
            CheckSet {
                adstack: true,
                ..Default::default()
            }
        );
        assert!(CheckSet::parse("dict,bogus").is_err());
        assert_eq!(
            CheckSet::ALL.to_string(),
            "lifetime,dict,bounds,adstack,clobber"
        );
    }
}
