//! `differential` runs two check sets per input (uninstrumented when the
//! program allows, and one instrumented set picked by the input): across
//! inputs every instrumented set must still be reached, and a set the
//! program's needs forbid never.

use arbitrary::Unstructured;
use guardlift_fuzz::exec::CHECK_SETS;
use guardlift_fuzz::gen::{generate, GenConfig, Needs};
use guardlift_fuzz::random_inputs;
use guardlift_fuzz::targets::pick_differential;
use guardlift_instrument::CheckSet;
use guardlift_jit::OptLevel;

#[test]
fn every_check_set_and_opt_level_is_picked() {
    let data = &random_inputs(11, 1, 64)[0];
    let mut g = generate(&mut Unstructured::new(data), &GenConfig::default());
    for needs in [
        Needs::default(),
        Needs {
            dict: true,
            ..Needs::default()
        },
        Needs {
            adstack: true,
            ..Needs::default()
        },
        Needs {
            dict: true,
            adstack: true,
            ..Needs::default()
        },
        Needs {
            lifetime: true,
            ..Needs::default()
        },
        Needs {
            bounds: true,
            dict: true,
            ..Needs::default()
        },
    ] {
        g.needs = needs;
        let mut seen = vec![false; CHECK_SETS.len()];
        let mut opts = (false, false);
        for k in 0..=255u8 {
            for b in [0u8, 1] {
                let (sets, opt) = pick_differential(&g, &mut Unstructured::new(&[k, b]));
                assert_eq!(
                    sets.len(),
                    1 + needs.allows(CHECK_SETS[0]) as usize,
                    "{needs:?}: {sets:?}"
                );
                for s in &sets {
                    assert!(needs.allows(*s), "{needs:?}: picked [{s}]");
                    seen[CHECK_SETS.iter().position(|c| c == s).unwrap()] = true;
                }
                match opt {
                    OptLevel::None => opts.0 = true,
                    _ => opts.1 = true,
                }
            }
        }
        for (c, seen) in CHECK_SETS.iter().zip(seen) {
            assert_eq!(seen, needs.allows(*c), "{needs:?}: [{c}] picked: {seen}");
        }
        assert!(opts.0 && opts.1, "both optimization levels are picked");
    }
    // An input that has run out picks the empty set (when allowed) and all checks.
    g.needs = Needs::default();
    let (sets, opt) = pick_differential(&g, &mut Unstructured::new(&[]));
    assert_eq!(sets, vec![CHECK_SETS[0], CheckSet::ALL]);
    assert_eq!(opt, OptLevel::Speed);
}

/// `differential` picks the JIT's placement from the byte after the check
/// set and level: every placement is reached by some byte, and an input
/// that has run out keeps the OS's choice.
#[test]
fn every_placement_is_picked() {
    use guardlift_fuzz::targets::pick_placement;
    use guardlift_jit::Placement;
    let mut seen = Vec::new();
    for b in 0..=255u8 {
        let p = pick_placement(&mut Unstructured::new(&[b]));
        if !seen.contains(&p) {
            seen.push(p);
        }
    }
    assert_eq!(seen.len(), Placement::ALL.len(), "{seen:?}");
    assert_eq!(
        pick_placement(&mut Unstructured::new(&[])),
        Placement::System
    );
}
