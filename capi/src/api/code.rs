//! C entry points on compiled code and its functions (`gl_compile`,
//! `gl_code_*`, `gl_func_*`): compile, look up with a signature check, call.

use super::*;

/// Compiles a module against a runtime.
///
/// # Safety
/// `out` is valid for a write. Compiled code runs with the full privileges of
/// native code (it dereferences whatever the IR computes).
#[no_mangle]
pub unsafe extern "C" fn gl_compile(
    rt: *mut gl_runtime,
    m: *mut gl_module,
    out: *mut *mut gl_code,
) -> c_int {
    const F: &str = "gl_compile";
    ffi(|| {
        // SAFETY: `out` is NULL or valid for a write by contract.
        unsafe { clear_out(out, std::ptr::null_mut(), F, "out") }?;
        let st = get_as!(Runtime, rt, Kind::Runtime, F, "rt");
        let ms = get_as!(Module, m, Kind::Module, F, "module");
        let ms = lock(&ms);
        if ms.module.layout != st.rt.layout() {
            return Err(Error::new(
                GL_ERR_LAYOUT,
                format!(
                    "{F}: the module's layout ({}) is not the runtime's ({}): objects would be read at another slot offset than the host wrote them; fix the module's `layout` line or override it with gl_module_set_layout",
                    ms.module.layout,
                    st.rt.layout()
                ),
            ));
        }
        let opts = lock(&st.symbols)
            .iter()
            .fold(CompileOptions::default(), |o, (n, a)| {
                // SAFETY: gl_runtime_add_symbol's contract (guardlift.h): the
                // C caller registered a function of the extern's signature
                // that stays callable while code compiled with it lives;
                // what it touches is on that caller's word, as for any C
                // function it hands out.
                unsafe { o.symbol(n.clone(), *a as *const u8) }
            });
        let code =
            Jit::compile(&ms.module, st.rt.clone(), &opts).map_err(|e| jit_error(e, &ms.file))?;
        let handle = handles::insert(Object::Code(Arc::new(CodeState {
            code,
            file: ms.file.clone(),
        })))?;
        // SAFETY: checked non-null.
        unsafe { put(out, ptr(handle)) };
        Ok(())
    })
}

/// A function's signature as type codes.
///
/// # Safety
/// `name` is NUL-terminated; `params` is NULL (with `cap` 0) or valid for
/// `cap` writes; `out_nparams` and `out_ret` are valid for writes.
#[no_mangle]
pub unsafe extern "C" fn gl_code_signature(
    code: *mut gl_code,
    name: *const c_char,
    params: *mut u32,
    cap: usize,
    out_nparams: *mut usize,
    out_ret: *mut u32,
) -> c_int {
    const F: &str = "gl_code_signature";
    ffi(|| {
        non_null(out_nparams, F, "out_nparams")?;
        non_null(out_ret, F, "out_ret")?;
        if cap > 0 {
            non_null(params, F, "params")?;
        }
        // `cap` is only an upper bound of what is written (the function's
        // arity); it must still describe memory that can exist.
        if cap
            .checked_mul(std::mem::size_of::<u32>())
            .filter(|&b| b <= isize::MAX as usize)
            .and_then(|b| (params as usize).checked_add(b))
            .is_none()
        {
            return Err(Error::new(
                GL_ERR_ARGUMENT,
                format!("{F}: `params` with capacity {cap} does not fit in the address space"),
            ));
        }
        // SAFETY: checked non-null.
        unsafe {
            put(out_nparams, 0);
            put(out_ret, GL_TYPE_VOID);
        }
        let c = get_as!(Code, code, Kind::Code, F, "code");
        // SAFETY: NUL-terminated by contract.
        let name = unsafe { str_arg(name, F, "name") }?;
        let (ps, ret) = c.code.signature(name).map_err(|e| jit_error(e, &None))?;
        for (i, t) in ps.iter().take(cap).enumerate() {
            // SAFETY: i < cap, and params is valid for cap writes.
            unsafe { params.add(i).write(code_of_type(Some(*t))) };
        }
        // SAFETY: checked non-null.
        unsafe {
            put(out_nparams, ps.len());
            put(out_ret, code_of_type(ret));
        }
        Ok(())
    })
}

/// Looks a function up by name, checking the caller's idea of its signature.
///
/// # Safety
/// `name` is NUL-terminated; `params` is valid for `nparams` reads (NULL if
/// 0); `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn gl_code_get_func(
    code: *mut gl_code,
    name: *const c_char,
    params: *const u32,
    nparams: usize,
    ret: u32,
    out: *mut *mut gl_func,
) -> c_int {
    const F: &str = "gl_code_get_func";
    ffi(|| {
        // SAFETY: `out` is NULL or valid for a write by contract.
        unsafe { clear_out(out, std::ptr::null_mut(), F, "out") }?;
        let c = get_as!(Code, code, Kind::Code, F, "code");
        // SAFETY: NUL-terminated by contract.
        let name = unsafe { str_arg(name, F, "name") }?;
        let name = name.strip_prefix('@').unwrap_or(name);
        // The function's real arity bounds what is read from `params`.
        let (ps, r) = c.code.signature(name).map_err(|e| jit_error(e, &c.file))?;
        if nparams != ps.len() {
            return Err(Error::new(
                GL_ERR_SIGNATURE,
                format!(
                    "{F}: signature mismatch for @{name}: the function is {}, the caller asked for {nparams} parameter(s)",
                    signature_text(&ps, r),
                ),
            ));
        }
        // SAFETY: checked by array_arg; valid for nparams reads by contract.
        let codes = unsafe { array_arg(params, nparams, Some(ps.len()), F, "params") }?;
        let mut want_p = Vec::with_capacity(codes.len());
        for (i, &t) in codes.iter().enumerate() {
            want_p.push(type_of_code(t).ok_or_else(|| {
                Error::new(
                    GL_ERR_ARGUMENT,
                    format!("{F}: params[{i}] = {t} is not a GL_TYPE_* value type"),
                )
            })?);
        }
        let want_r = match ret {
            GL_TYPE_VOID => None,
            t => Some(type_of_code(t).ok_or_else(|| {
                Error::new(
                    GL_ERR_ARGUMENT,
                    format!("{F}: ret = {t} is not a GL_TYPE_* code"),
                )
            })?),
        };
        if ps != want_p || r != want_r {
            return Err(Error::new(
                GL_ERR_SIGNATURE,
                format!(
                    "{F}: signature mismatch for @{name}: the function is {}, the caller asked for {}",
                    signature_text(&ps, r),
                    signature_text(&want_p, want_r)
                ),
            ));
        }
        let handle = handles::insert(Object::Func(Arc::new(FuncState {
            code: c.code.clone(),
            name: name.to_string(),
            params: ps,
            ret: r,
        })))?;
        // SAFETY: checked non-null.
        unsafe { put(out, ptr(handle)) };
        Ok(())
    })
}

/// Frees compiled code (NULL: no-op). Functions looked up from it keep it alive.
#[no_mangle]
pub extern "C" fn gl_code_free(code: *mut gl_code) -> c_int {
    free_handle(h(code), Kind::Code, "gl_code_free")
}

/// A wrong argument count says which function and how many it takes.
fn arity_error(f: &FuncState, nargs: usize, e: Error, func: &str) -> Error {
    if nargs == f.params.len() {
        return e;
    }
    Error::new(
        GL_ERR_ARGUMENT,
        format!(
            "{func}: @{} takes {} argument(s), got {nargs}",
            f.name,
            f.params.len()
        ),
    )
}

fn call_bits(f: &FuncState, args: &[u64], func: &str) -> Result<Option<u64>> {
    if args.len() != f.params.len() {
        return Err(Error::new(
            GL_ERR_ARGUMENT,
            format!(
                "{func}: @{} takes {} argument(s), got {}",
                f.name,
                f.params.len(),
                args.len()
            ),
        ));
    }
    // SAFETY: the C API is the boundary where Rust's checks end: compiled
    // code "runs with the full privileges of native code" (guardlift.h,
    // gl_compile) and the C caller of gl_func_call vouches for the memory it
    // touches (objects passed as `ptr`, raw accesses, host symbols), as for
    // any C function it calls.
    unsafe { f.code.call_dynamic(&f.name, args) }.map_err(|e| jit_error(e, &None))
}

/// Calls a function with raw argument bits.
///
/// # Safety
/// `args` is valid for `nargs` reads (NULL if 0); `out_result` is NULL or
/// valid for a write.
#[no_mangle]
pub unsafe extern "C" fn gl_func_call(
    f: *mut gl_func,
    args: *const u64,
    nargs: usize,
    out_result: *mut u64,
) -> c_int {
    const F: &str = "gl_func_call";
    ffi(|| {
        aligned_or_null(out_result, F, "out_result")?;
        // SAFETY: NULL or valid.
        unsafe { put(out_result, 0) };
        let fs = get_as!(Func, f, Kind::Func, F, "func");
        // SAFETY: checked by array_arg; valid for nargs reads by contract.
        let a = unsafe { array_arg(args, nargs, Some(fs.params.len()), F, "args") }
            .map_err(|e| arity_error(&fs, nargs, e, F))?;
        let r = call_bits(&fs, a, F)?;
        // SAFETY: NULL or valid.
        unsafe { put(out_result, r.unwrap_or(0)) };
        Ok(())
    })
}

/// The native address of a function.
///
/// # Safety
/// `out_addr` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn gl_func_addr(f: *mut gl_func, out_addr: *mut *const c_void) -> c_int {
    const F: &str = "gl_func_addr";
    ffi(|| {
        non_null(out_addr, F, "out_addr")?;
        // SAFETY: checked non-null; valid for a write by contract.
        unsafe { put(out_addr, std::ptr::null()) };
        let fs = get_as!(Func, f, Kind::Func, F, "func");
        let nf = fs
            .code
            .native_func(&fs.name)
            .map_err(|e| jit_error(e, &None))?;
        // SAFETY: checked non-null; valid for a write by contract.
        unsafe { put(out_addr, nf.addr().cast()) };
        Ok(())
    })
}

/// Calls a function whose params and result are all `i64`/`ptr` (or no result).
///
/// # Safety
/// As [`gl_func_call`].
#[no_mangle]
pub unsafe extern "C" fn gl_func_call_i64(
    f: *mut gl_func,
    args: *const i64,
    nargs: usize,
    out_result: *mut i64,
) -> c_int {
    const F: &str = "gl_func_call_i64";
    ffi(|| {
        aligned_or_null(out_result, F, "out_result")?;
        // SAFETY: NULL or valid.
        unsafe { put(out_result, 0) };
        let fs = get_as!(Func, f, Kind::Func, F, "func");
        if !fs.params.iter().all(|t| t.is_word()) || !fs.ret.is_none_or(|t| t.is_word()) {
            return Err(Error::new(
                GL_ERR_SIGNATURE,
                format!(
                    "{F}: @{} is {}; gl_func_call_i64 needs i64/ptr params and an i64/ptr result or none (use gl_func_call)",
                    fs.name,
                    signature_text(&fs.params, fs.ret)
                ),
            ));
        }
        // SAFETY: checked by array_arg (the count first: nothing is copied
        // for a wrong one); valid for nargs reads by contract.
        let a: Vec<u64> = unsafe { array_arg(args, nargs, Some(fs.params.len()), F, "args") }
            .map_err(|e| arity_error(&fs, nargs, e, F))?
            .iter()
            .map(|&x| x as u64)
            .collect();
        let r = call_bits(&fs, &a, F)?;
        // SAFETY: NULL or valid.
        unsafe { put(out_result, r.unwrap_or(0) as i64) };
        Ok(())
    })
}

/// Frees a function handle (NULL: no-op).
#[no_mangle]
pub extern "C" fn gl_func_free(f: *mut gl_func) -> c_int {
    free_handle(h(f), Kind::Func, "gl_func_free")
}
