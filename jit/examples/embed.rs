//! A tiny embedder: compile a module whose loop stores attributes through a
//! guarded `store_attr`, run it through a typed entry point, and print what
//! the runtime reported.
//!
//! ```text
//! cargo run -p guardlift-jit --example embed
//! ```

use guardlift_jit::{CompileOptions, Jit, Ptr};
use guardlift_runtime::{Mode, Runtime, RuntimeConfig};

const PROGRAM: &str = r#"
extern fn @obj_new(i64) -> ptr
extern fn @fault_clear_lsb(ptr)

; Stores i into attribute 1 of %o, n times; returns what it reads back.
fn @fill(%o: ptr, %n: i64) -> i64 {
entry:
    %zero = iconst.i64 0
    jump loop(%zero)
loop(%i: i64):
    %more = icmp.slt %i, %n
    brif %more, body, done
body:
    guard.store_attr %o, 1, %i
    %one = iconst.i64 1
    %next = iadd %i, %one
    jump loop(%next)
done:
    %v = guard.load_attr %o, 1
    return %v
}

fn @new(%n: i64) -> ptr {
entry:
    %o = call @obj_new(%n)
    return %o
}

fn @corrupt(%o: ptr) {
entry:
    call @fault_clear_lsb(%o)
    return
}
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let module = guardlift_ir::parse_and_verify(PROGRAM)?;
    // Recover mode: violations are recorded, the guarded op is skipped, and
    // the program goes on.
    let rt = Runtime::new(RuntimeConfig {
        mode: Mode::Recover,
        ..Default::default()
    });
    let code = Jit::compile(&module, rt.clone(), &CompileOptions::default())?;

    // @new and @corrupt only call built-ins, which check their arguments:
    // safe Rust may call them. @fill dereferences the object it is given,
    // so calling it is `unsafe`: we vouch for the pointer.
    let new = code.safe_func::<i64, Ptr>("new")?;
    let corrupt = code.safe_func::<Ptr, ()>("corrupt")?;
    let fill = code.func::<(Ptr, i64), i64>("fill")?;

    let obj = new.call(4);
    // SAFETY: `obj` is a live object of `rt` with 4 attributes; @fill uses
    // attribute 1.
    println!("fill(obj, 10) = {}", unsafe { fill.call((obj, 10)) });
    println!("reports so far: {}", rt.take_reports().len());

    corrupt.call(obj); // a rogue writer clears the values tag bit
                       // SAFETY: as above (the guards stop the corrupted word).
    let after = unsafe { fill.call((obj, 10)) };
    println!("fill(obj, 10) after corruption = {after}");
    for r in rt.take_reports() {
        print!("{}", r.to_human());
    }
    // The dynamic interface, as the command line uses it.
    // SAFETY: as above.
    let raw = unsafe { code.call_dynamic("fill", &[obj.0, 3])? };
    println!("call_dynamic(fill, [obj, 3]) = {raw:?}");
    rt.take_reports();
    Ok(())
}
