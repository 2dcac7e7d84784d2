//! Source positions set through the IR builder (`FunctionBuilder::set_srcloc`)
//! reach the reports of instrumented code, so an interpreter maps a report
//! back to its own bytecode offset; a verifier error of a module built
//! without positions names its function.

use guardlift_abi::layout::DictLayout;
use guardlift_instrument::{instrument, CheckSet};
use guardlift_ir::builder::ModuleBuilder;
use guardlift_ir::{SrcLoc, Type};
use guardlift_jit::{CompileOptions, Jit, Ptr};
use guardlift_runtime::internals::*;
use guardlift_runtime::{Mode, Runtime, RuntimeConfig};

#[test]
fn reports_name_the_position_the_builder_set() {
    let mut mb = ModuleBuilder::new(DictLayout::Cpython312);
    let id = mb.declare_function("get", &[Type::Ptr], Some(Type::I64));
    let mut f = mb.function(id);
    let entry = f.create_block("entry");
    f.switch_to_block(entry);
    let obj = f.param(0);
    // The embedder's bytecode offsets, one per instruction it emits.
    f.set_srcloc(SrcLoc { line: 17, col: 2 });
    let a = f.load_attr(obj, 0);
    f.set_srcloc(SrcLoc { line: 18, col: 4 });
    let b = f.load_attr(obj, 1);
    let s = f.binary(guardlift_ir::BinOp::Iadd, a, b);
    f.ret(Some(s));
    let m = instrument(&mb.build().expect("verifies"), CheckSet::ALL);
    let rt = Runtime::new(RuntimeConfig {
        mode: Mode::Recover,
        abort_process: false,
        ..Default::default()
    });
    let code = Jit::compile(&m, rt.clone(), &CompileOptions::default()).expect("compile");
    let o = rt.obj_new(2);
    rt.fault_clear_lsb(o);
    let get = code.func::<Ptr, i64>("get").expect("get");
    // SAFETY: `o` is a live object of the runtime's heap.
    let r = unsafe { get.call(Ptr(o)) };
    assert_eq!(r, 0, "both loads recovered");
    let at: Vec<(u32, u32, String)> = (rt.take_reports().iter())
        .map(|r| (r.info.line, r.info.col, r.info.function.clone()))
        .collect();
    assert_eq!(
        at,
        vec![(17, 2, "get".to_string()), (18, 4, "get".to_string())]
    );
}

#[test]
fn a_verifier_error_without_a_position_names_its_function() {
    let mut mb = ModuleBuilder::new(DictLayout::Cpython312);
    let id = mb.declare_function("unfinished", &[], None);
    let mut f = mb.function(id);
    let entry = f.create_block("entry");
    f.switch_to_block(entry);
    let e = mb.build().expect_err("no terminator");
    let text = e.to_string();
    assert!(text.contains("(in @unfinished)"), "{text}");
}
