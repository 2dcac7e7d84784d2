/*
 * guardlift.h — the C API of guardlift, a JIT backend with sanitizer-style
 * checks for object-model (managed-dict word) and adstack code.
 *
 * Link: libguardlift.a (or libguardlift.so) from `cargo build -p guardlift-capi`,
 *       plus -lpthread -ldl -lm.
 *
 * The IR text format is spec/IR.md; docs/EMBEDDING.md walks through using
 * guardlift as an interpreter's JIT backend.
 *
 * Conventions (they hold for every function below):
 *
 *  - Every function except gl_last_error, gl_status_name, gl_abi_version and
 *    gl_report_struct_size returns a gl_status: GL_OK (0) or a GL_ERR_* code.
 *    The message of the last call on the calling thread is gl_last_error()
 *    ("" after a success).
 *  - Nothing unwinds into the caller: an internal panic is GL_ERR_PANIC.
 *  - Handles (gl_module *, gl_runtime *, gl_code *, gl_func *, gl_reports *)
 *    are opaque values, not addresses: never dereference them. Each one is
 *    owned by the caller from the call that returns it until the matching
 *    gl_*_free. Using a handle after its free, freeing it twice, or passing
 *    a handle of another type is detected in every build (GL_ERR_HANDLE),
 *    including after the library reused its slot for a new object.
 *    gl_*_free(NULL) is a no-op that returns GL_OK.
 *  - Handles are independent: freeing one never invalidates another.
 *    Objects that need each other keep each other alive internally (a
 *    gl_func keeps its code, code keeps its runtime).
 *  - Out pointers ("out_*", "out") must not be NULL unless documented; on
 *    failure they are set to NULL / 0.
 *  - Every argument is validated before anything is read, allocated or
 *    copied: a length that is not the function's (nargs, nparams) is an
 *    error even when huge (SIZE_MAX); an array with a non-zero length must
 *    not be NULL (GL_ERR_NULL); pointers must be aligned for their type and
 *    an array must fit in the address space (GL_ERR_ARGUMENT). Nothing is
 *    written through a pointer that fails these checks.
 *  - Strings passed in are NUL-terminated UTF-8 and only borrowed for the
 *    call. Strings returned as `const char *` are owned by guardlift:
 *      * gl_last_error(), gl_module_print(), gl_runtime_take_host_fault():
 *        valid until the next guardlift call on the same thread;
 *      * strings inside a gl_report passed to a callback: valid during the
 *        callback only;
 *      * strings inside reports from gl_runtime_take_reports: valid until
 *        that gl_reports list is freed.
 *  - Threads: every function may be called from any thread. A runtime,
 *    code and funcs may be used from many threads at once (reports are
 *    counted exactly). gl_last_error() is per thread.
 *  - Signals: guardlift installs process-wide handlers with sigaction
 *    (SA_SIGINFO | SA_ONSTACK) for SIGILL and SIGTRAP the first time code is
 *    compiled in GL_MODE_TRAP, and for SIGSEGV, SIGBUS and SIGFPE the first
 *    time any code is compiled (once; never removed): a fault in compiled
 *    code or in a host function it called is a host_fault report (exit
 *    134). For a signal that is not guardlift's it calls the action that was
 *    installed before it (SIG_DFL: restored and re-raised). A host that
 *    installs its own handler for these signals AFTER that must chain:
 *    keep the old action sigaction() returns and call it (sa_sigaction with
 *    (sig, info, ucontext) if SA_SIGINFO is set, else sa_handler) for every
 *    signal it does not consume; otherwise trap-mode and fault reports are
 *    silently lost. Installed before, nothing is needed (docs/EMBEDDING.md).
 *    Each thread that calls gl_func_call* gets an alternate signal stack
 *    (64 KiB, unmapped at thread exit) unless it has one of >= 32 KiB, so
 *    the handler works on a thread with almost no stack left.
 *  - 64-bit hosts only (x86_64, aarch64).
 */
#ifndef GUARDLIFT_H
#define GUARDLIFT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GL_ABI_VERSION 2u

/* ---- status codes ------------------------------------------------------- */

typedef int gl_status;
enum {
    GL_OK = 0,
    GL_ERR_NULL = 1,        /* a required pointer argument was NULL */
    GL_ERR_HANDLE = 2,      /* freed / double-freed / wrong-type / unknown handle */
    GL_ERR_ARGUMENT = 3,    /* bad value: type code, check bits, mode, layout, options, arg count, non-UTF-8 */
    GL_ERR_PARSE = 4,       /* IR text did not parse ("[FILE:]LINE:COL: error: ...") */
    GL_ERR_VERIFY = 5,      /* IR did not verify (one line per error) */
    GL_ERR_LAYOUT = 6,      /* module layout != runtime layout (gl_compile) */
    GL_ERR_LINK = 7,        /* an extern nothing provides, or a built-in with the wrong signature */
    GL_ERR_CODEGEN = 8,     /* code generation failed */
    GL_ERR_NO_FUNCTION = 9, /* no function of that name */
    GL_ERR_SIGNATURE = 10,  /* the caller's signature does not match the function's */
    GL_ERR_PANIC = 11,      /* internal error (a guardlift bug); nothing crossed into C */
    GL_ERR_IO = 12          /* e.g. a log_path that cannot be opened */
};

/* ---- value types, modes, checks, report kinds ----------------------------- */

/* Type codes of function signatures. */
typedef uint32_t gl_type;
enum {
    GL_TYPE_VOID = 0, /* only as a result: "no result" */
    GL_TYPE_I8 = 1,
    GL_TYPE_I32 = 2,
    GL_TYPE_I64 = 3,
    GL_TYPE_PTR = 4,
    GL_TYPE_F32 = 5,
    GL_TYPE_F64 = 6
};

/* What a failed check does (fixed per runtime). */
typedef uint32_t gl_mode;
enum {
    GL_MODE_ABORT = 0,   /* report (callback + stderr), then abort() the process */
    GL_MODE_RECOVER = 1, /* record, skip the bad operation, go on */
    GL_MODE_TRAP = 2     /* trapping instruction; the signal handler writes the report to
                            the log (stderr) and aborts; the report callback is NOT called
                            (it would not be async-signal-safe) */
};

/* Instrumentation checks (bit set). */
enum {
    GL_CHECK_DICT = 1u,    /* managed-dict word tag (dict_slot.*, load_attr, store_attr) */
    GL_CHECK_ADSTACK = 2u, /* adstack overflow / underflow */
    GL_CHECK_CLOBBER = 4u, /* raw stores over watched dict slots */
    GL_CHECK_BOUNDS = 8u,  /* load_attr/store_attr index >= the values array's capacity */
    GL_CHECK_LIFETIME = 16u, /* use after free, double free, invalid free */
    GL_CHECK_ALL = 31u
};

/* gl_report.kind */
enum {
    GL_REPORT_DICT_SLOT_TAG = 0,
    GL_REPORT_ADSTACK_OVERFLOW = 1,
    GL_REPORT_ADSTACK_UNDERFLOW = 2,
    GL_REPORT_SLOT_CLOBBER = 3,
    GL_REPORT_USE_AFTER_FREE = 4,
    GL_REPORT_DOUBLE_FREE = 5,
    GL_REPORT_INVALID_FREE = 6,
    GL_REPORT_ATTR_OUT_OF_BOUNDS = 7,
    /* watch=: a watched dict word written by foreign code or left malformed;
     * object, value (the new word) and width are set; the writer's symbol,
     * pc and backtrace are in text and json. */
    GL_REPORT_FOREIGN_WRITE = 8,
    /* bounds: a raw load/store touching a heap redzone; address, width and
     * (a store) value are set. */
    GL_REPORT_HEAP_OVERFLOW = 9
};

/* gl_report.site of a report that no guard site made (foreign_write: the
 * writer is in line/col/op when it is compiled IR, else in text and json). */
#define GL_NO_SITE 0xffffffffu

/* ---- opaque handles ------------------------------------------------------- */

typedef struct gl_module gl_module;   /* parsed (maybe instrumented) IR */
typedef struct gl_runtime gl_runtime; /* layout, mode, host symbols, reports */
typedef struct gl_code gl_code;       /* compiled code of one module */
typedef struct gl_func gl_func;       /* a function of compiled code, signature checked */
typedef struct gl_reports gl_reports; /* reports taken from a runtime */

/* ---- reports -------------------------------------------------------------- */

/* One report: where the guard sits and what the check observed at check
 * time. Deduplicated per (site, kind); `count` is the number of occurrences
 * so far. Fields that do not apply to the kind are 0 / NULL. */
typedef struct gl_report {
    uint32_t kind;              /* GL_REPORT_* */
    uint32_t site;              /* runtime-global site id; GL_NO_SITE for foreign_write */
    const char *kind_name;      /* "dict_slot_tag", "adstack_overflow", ... */
    const char *function;       /* IR function of the guarded instruction, without '@' */
    uint32_t line;              /* its position in the IR text (1-based) */
    uint32_t col;
    const char *op;             /* guarded opcode: "dict_slot.load", "store_attr", ... */
    uint64_t count;
    uint64_t object;            /* dict_slot_tag, lifetime kinds, attr_out_of_bounds: the object */
    uint64_t value;             /* dict_slot_tag: the word seen; slot_clobber: the value stored */
    uint64_t capacity;          /* adstack kinds; attr_out_of_bounds: the values array's capacity */
    uint64_t len;               /* adstack kinds */
    uint64_t address;           /* slot_clobber, use_after_free by a raw load/store: the address */
    uint32_t width;             /* ... and its width in bytes */
    uint32_t has_last_write;    /* dict kinds: 1 when the last known write to the slot is known */
    uint64_t last_write_value;
    int64_t last_write_site;    /* -1 when the writer was not instrumented code */
    const char *last_write_by;  /* "obj_new", "dict_slot.store at @f 12:5 (site 3)", or NULL */
    const char *text;           /* sanitizer-style text, several lines ending in '\n' */
    const char *json;           /* one line of JSON, no newline */
    uint64_t index;             /* attr_out_of_bounds: the attribute index */
    uint64_t object_id;         /* allocation id of the object the report is about (0: unknown) */
    const char *alloc_site_function; /* IR call that allocated it (NULL: unknown, e.g. a host object) */
    uint32_t alloc_site_line;
    uint32_t free_site_line;    /* lifetime kinds: the IR call that freed it (0 / NULL: unknown or host) */
    const char *free_site_function;
    /* Every object the occurrences were about, first seen first, with how
     * many were about each (up to 8; the first is object_id; NULL / 0 when
     * no object is known). More than one: the spec's `objects` list. */
    const struct gl_report_object *objects;
    uint64_t object_count;
} gl_report;

/* One entry of gl_report.objects. */
typedef struct gl_report_object {
    uint64_t object_id;
    uint64_t count;
} gl_report_object;

/* Entry `index` (< report->object_count) of report->objects: its allocation
 * id and count. Errors: GL_ERR_NULL, GL_ERR_ARGUMENT (index out of range). */
gl_status gl_report_get_object(const gl_report *report, size_t index, uint64_t *out_id,
                               uint64_t *out_count);

/* Which host stack of a report's object gl_report_get_object_stack gives. */
enum {
    GL_STACK_ALLOC = 0, /* where the host registered it (gl_runtime_register_object) */
    GL_STACK_FREE = 1   /* where the host reported it freed (gl_runtime_object_freed) */
};

/* The host's native stack recorded when the report's object (object_id)
 * was registered or reported freed: *out_count frames (0: none recorded —
 * an object made by @obj_new, a live object's free stack, host_stacks=0,
 * the default),
 * and frame `index`, innermost first, in *out_frame: "0xPC in FUNCTION
 * FILE:LINE" (file and line when the host has debug info; "0xPC ?" without
 * a symbol), or NULL when index >= *out_count. The frame strings live as
 * long as the report's other strings. The report's text and json show the
 * same frames ("alloc_stack", "free_stack"). Errors: GL_ERR_NULL,
 * GL_ERR_ARGUMENT (`which` is not a GL_STACK_*). */
gl_status gl_report_get_object_stack(const gl_report *report, uint32_t which, size_t index,
                                     const char **out_frame, size_t *out_count);

/* Report callback: called for each occurrence of a violation (up to the
 * runtime's report_limit per site and kind), on the thread that ran the
 * failing check, possibly on several threads at once. `report` and its
 * strings are valid during the call only. The callback may call guardlift
 * functions (e.g. gl_runtime_take_reports) and must return normally (no
 * longjmp out of it). It must not free objects or write a managed-dict
 * word or a values array (nor call code that does): generated code makes
 * some checks of a loop's objects once per loop entry, on the proof that
 * nothing in the loop, a report included, changes them (EMBEDDING.md). */
typedef void (*gl_report_fn)(const gl_report *report, void *user_data);

/* A host function, cast to this type for registration:
 *   gl_runtime_add_symbol(rt, "interp_dict_get", (gl_host_fn)interp_dict_get); */
typedef void (*gl_host_fn)(void);

/* ---- misc ------------------------------------------------------------------ */

/* The message of the last call on this thread; "" if it succeeded. Never
 * NULL. Owned by guardlift, valid until the next guardlift call on this
 * thread. */
const char *gl_last_error(void);

/* "GL_ERR_PARSE" etc.; static storage, never NULL. */
const char *gl_status_name(gl_status status);

/* GL_ABI_VERSION of the linked library. */
uint32_t gl_abi_version(void);

/* sizeof(gl_report) as the library was built; must equal sizeof(gl_report). */
size_t gl_report_struct_size(void);

/* ---- modules ---------------------------------------------------------------- */

/* Parses and verifies IR text (spec/IR.md). `filename` (nullable) prefixes
 * diagnostics: "FILE:LINE:COL: error: ...". On success *out is a new module
 * owned by the caller (free with gl_module_free). `text` is only borrowed.
 * Errors: GL_ERR_PARSE, GL_ERR_VERIFY, GL_ERR_NULL, GL_ERR_ARGUMENT. */
gl_status gl_module_parse(const char *text, const char *filename, gl_module **out);

/* Runs the instrumentation pass in place: every instruction covered by
 * `checks` (GL_CHECK_* bits) becomes guarded. Sites keep the positions of the
 * text that was parsed. Idempotent for already-guarded instructions. The
 * mode (abort / recover / trap) is the runtime's. */
gl_status gl_module_instrument(gl_module *m, uint32_t checks);

/* Overrides the module's `layout` line: "cpython312", "phoenix" or
 * "dict_slot_offset = N" (N a multiple of 8 within +-4096, decimal or 0x hex).
 * gl_compile requires module layout == runtime layout; this is how a host
 * that generates IR without a layout line (default cpython312) or that
 * compiles one text for several layouts makes them agree. */
gl_status gl_module_set_layout(gl_module *m, const char *layout);

/* The module's dict slot offset in bytes from the object pointer (-24 for
 * cpython312, +24 for phoenix). */
gl_status gl_module_get_layout(gl_module *m, int32_t *out_offset);

/* The module's canonical text (instrumented modules show `guard.` ops and
 * `!site(ID, LINE:COL)`). *out_text is owned by guardlift and valid until the
 * next guardlift call on this thread: copy it if you need it longer. */
gl_status gl_module_print(gl_module *m, const char **out_text);

/* Frees a module. Code compiled from it is not affected. */
gl_status gl_module_free(gl_module *m);

/* ---- runtimes --------------------------------------------------------------- */

/* Creates a runtime: the object layout compiled code assumes (`layout`:
 * as for gl_module_set_layout; NULL = "cpython312"), and what a failed check
 * does (`mode`, fixed for the runtime's life). The runtime also owns the
 * model heap behind the built-in host functions (@obj_new, ...), the report
 * sink and the host symbols registered with it. *out is owned by the caller
 * (gl_runtime_free). GUARDLIFT_OPTIONS is not read: pass
 * getenv("GUARDLIFT_OPTIONS") to gl_runtime_configure if you want it. */
gl_status gl_runtime_new(const char *layout, gl_mode mode, gl_runtime **out);

/* Report settings in GUARDLIFT_OPTIONS syntax ("key=value" separated by ':'
 * or ','): log_path=FILE (reports written on abort / at teardown go there
 * instead of stderr), json=0|1, report_limit=N (callback calls per site and
 * kind; counts stay exact), watch=SPEC (hardware watchpoints on the dict
 * words of objects the runtime creates or the host registers from now on:
 * object:N[+M...], sample:K[@P] (the ids = P mod K; without @P, P is drawn
 * at random and printed on stderr, "guardlift: watch sample:K: phase P
 * ..."), or recent; where they cannot be had, one line "guardlift:
 * watchpoints unavailable: REASON" on stderr and the run goes on).
 * host_stacks=0|1 (default 0): record the host's native stack (up to 12
 * return addresses, about 6-7 us per call) at gl_runtime_register_object
 * and gl_runtime_object_freed, shown in reports about the object
 * (gl_report_get_object_stack).
 * perfmap=1, jitdump=1, gdb=1: modules compiled from now on are named to
 * perf (/tmp/perf-PID.map; jit-PID.dump for perf inject --jit) and gdb (the
 * GDB JIT interface), see docs/EMBEDDING.md, "Profiling and debugging JIT
 * code"; all off by default.
 * mode=... is accepted only if it equals the runtime's mode. */
gl_status gl_runtime_configure(gl_runtime *rt, const char *options);

/* Registers a host function for IR declarations `extern fn @name(...)` of
 * modules compiled against `rt` from now on (already compiled code is not
 * affected). `name` may carry the '@'; registering a name again replaces the
 * function. The function is called with the C calling convention and the
 * extern's declared signature (i64/ptr -> int64_t/uint64_t, i32 -> int32_t,
 * i8 -> int8_t sign-extended, f64 -> double, f32 -> float); nothing checks
 * that they agree. Built-in names (obj_new, obj_dictify, obj_free,
 * fault_clear_lsb, load_attr_slow, store_attr_slow, sin, cos, exp, log,
 * print_i64, print_f64) are always bound to the runtime's model heap and are
 * refused here (GL_ERR_ARGUMENT): the slow paths of load_attr/store_attr are
 * bound with gl_runtime_bind_attr_slow_paths instead. The function must
 * stay callable as long as code compiled with it lives. */
gl_status gl_runtime_add_symbol(gl_runtime *rt, const char *name, gl_host_fn fn);

/* The host's own attribute slow paths: what load_attr/store_attr call on
 * a managed-dict word that is not values-tagged, instead of the runtime's
 * model heap (so a values miss goes straight to the VM's dict code). `obj`
 * is the object's address as IR code holds it, `index` the attribute index
 * of the op; the load returns the attribute's raw bits. */
typedef uint64_t (*gl_load_attr_slow_fn)(void *user_data, uint64_t obj, uint32_t index);
typedef void (*gl_store_attr_slow_fn)(void *user_data, uint64_t obj, uint32_t index,
                                      uint64_t value);

/* Binds the host's slow paths (both non-NULL, else GL_ERR_NULL), for every
 * object from now on, the model heap's included. One binding per runtime,
 * made before any module is compiled against it: GL_ERR_ARGUMENT otherwise
 * (code compiled earlier assumed the model heap's slow paths). The
 * functions may do what host functions do (allocate, free objects and tell
 * the runtime, call back into the interpreter); instrumented loops with an
 * attribute op then keep all their checks (docs/EMBEDDING.md). They must be
 * callable from any thread running the code, with `user_data`, until the
 * runtime is freed, and return normally (no longjmp). */
gl_status gl_runtime_bind_attr_slow_paths(gl_runtime *rt, gl_load_attr_slow_fn load,
                                          gl_store_attr_slow_fn store, void *user_data);

/* Installs the report callback (replacing any previous one); cb == NULL
 * removes it. `user_data` is passed back untouched; guardlift never frees
 * it. After gl_runtime_free(rt) returns the callback is never called again.
 * In GL_MODE_ABORT the callback runs before the process aborts; in
 * GL_MODE_TRAP it is not called (the signal handler only writes the log). */
gl_status gl_runtime_set_report_callback(gl_runtime *rt, gl_report_fn cb, void *user_data);

/* Takes every report recorded since the last take (asking again finds none
 * until new violations happen). *out_list is a new list owned by the caller
 * (gl_reports_free); *out_items (nullable) points to an array of *out_count
 * (nullable) reports owned by the list and valid until it is freed. */
gl_status gl_runtime_take_reports(gl_runtime *rt, gl_reports **out_list,
                                  const gl_report **out_items, size_t *out_count);

/* Number of (site, kind) reports recorded and not yet taken. */
gl_status gl_runtime_pending_reports(gl_runtime *rt, size_t *out_count);

/* The first host fault of the model heap since the last call (a built-in
 * like @obj_free or @load_attr_slow handed a bad object; the operation did
 * nothing), taken; *out_msg = NULL when there was none. The message is
 * valid until the next guardlift call on this thread. */
gl_status gl_runtime_take_host_fault(gl_runtime *rt, const char **out_msg);

/* Host objects (the lifetime of objects the host allocates itself, as a
 * tp_alloc / tp_dealloc hook would report it).
 *
 * gl_runtime_register_object: the host made an object at `obj`, laid out
 * as the runtime's layout says (dict slot at obj + offset; a values-tagged
 * word points one byte before a values array whose u64 capacity sits at
 * values - 8). *out_id receives its allocation id (1, 2, 3, ... per
 * runtime, shared with objects made by @obj_new); reports about it carry
 * that id. GL_ERR_ARGUMENT: NULL or unaligned address, or already live.
 *
 * gl_runtime_object_freed: the host freed the object at `obj`. Call it
 * before the memory can be reused. guardlift never watches a freed object:
 * its dict slot leaves the clobber watch list at once, so later ordinary
 * stores into reused memory are never reported as slot_clobber. Until an
 * object is registered at that address again, instrumented code using the
 * stale pointer (load_attr, store_attr, dict_slot.*) is a use_after_free
 * under GL_CHECK_LIFETIME. guardlift never reads or writes the host's
 * freed memory. An address compiled code watched but the host never
 * registered is only taken off the watch list; anything else is
 * GL_ERR_ARGUMENT (not a live object).
 *
 * With host_stacks=1 (gl_runtime_configure) both record the caller's
 * native stack (the host's frames, up to 12 return addresses, symbolized
 * only when a report about the object is made): reports
 * about the object show where it was registered and freed
 * (gl_report_get_object_stack). Not to be called from a signal handler. */
gl_status gl_runtime_register_object(gl_runtime *rt, const void *obj, uint64_t *out_id);
gl_status gl_runtime_object_freed(gl_runtime *rt, const void *obj);

/* Frees the runtime handle and removes its report callback. Code compiled
 * against it keeps the runtime itself alive (and can still run); reports
 * nobody took are written to the log (stderr) when the last user is gone. */
gl_status gl_runtime_free(gl_runtime *rt);

/* ---- report lists ------------------------------------------------------------ */

/* The items of a list (owned by the list, valid until gl_reports_free). */
gl_status gl_reports_get(gl_reports *list, const gl_report **out_items, size_t *out_count);

/* Frees a list and every string its reports point to. */
gl_status gl_reports_free(gl_reports *list);

/* ---- compiling and calling ---------------------------------------------------- */

/* Verifies, links (built-ins, then rt's host symbols) and compiles every
 * function of `m` for the host. `m` is only read (free it whenever you like);
 * *out is new code owned by the caller (gl_code_free) that keeps `rt`'s
 * runtime alive. Errors: GL_ERR_LAYOUT (module layout != runtime layout),
 * GL_ERR_LINK ("[FILE:]LINE:COL: error: undefined symbol @x"),
 * GL_ERR_VERIFY, GL_ERR_CODEGEN. Compiled code runs with the full
 * privileges of native code. */
gl_status gl_compile(gl_runtime *rt, gl_module *m, gl_code **out);

/* A function's signature: up to `cap` parameter type codes into `params`
 * (nullable when cap == 0), their number into *out_nparams and the result
 * code into *out_ret (GL_TYPE_VOID: none). `name` may carry the '@'. */
gl_status gl_code_signature(gl_code *code, const char *name, gl_type *params, size_t cap,
                            size_t *out_nparams, gl_type *out_ret);

/* Looks up function `name` and checks that its signature is exactly
 * (params[0..nparams]) -> ret (GL_TYPE_VOID for none; i64 and ptr are
 * distinct here). Errors: GL_ERR_NO_FUNCTION, GL_ERR_SIGNATURE (the message
 * shows both signatures; also when nparams is not the function's parameter
 * count, checked before `params` is read), GL_ERR_ARGUMENT (bad type
 * code). *out is a new
 * function handle owned by the caller (gl_func_free); it keeps the code
 * alive, so gl_code_free may come first. */
gl_status gl_code_get_func(gl_code *code, const char *name, const gl_type *params,
                           size_t nparams, gl_type ret, gl_func **out);

/* Frees a code handle. The machine code is released when the last function
 * handle looked up from it is freed too, and never while a gl_func_call into
 * it is running (the call holds its own reference): freeing handles from a
 * report callback or from another thread during a call is safe. */
gl_status gl_code_free(gl_code *code);

/* Calls the function with raw argument bits: integers sign-extended to 64
 * bits from their width, ptr as the address, f32 as its bits in the low 32
 * bits, f64 as its bits. The result comes back the same way in *out_result
 * (nullable; 0 for a function without a result). `nargs` must equal the
 * parameter count (GL_ERR_ARGUMENT, checked before `args` is read). In GL_MODE_ABORT / GL_MODE_TRAP a
 * violation ends the process inside this call. As when calling any C
 * function, the caller vouches that the memory the code reaches (objects
 * passed as ptr, raw load/store, host symbols) is valid for it. */
gl_status gl_func_call(gl_func *f, const uint64_t *args, size_t nargs, uint64_t *out_result);

/* The native address of the function (what `func_addr @name` gives IR
 * code): callable with the function's IR signature under the platform's C
 * convention, e.g. from the VM's dispatch tables or as a call_indirect
 * target of another module. Valid while `f` (or another handle to the same
 * code) is live, never after. A call through it skips what gl_func_call
 * does first (marking the thread as running compiled code, an alternate
 * signal stack): a fault in a host function it calls is then a fault of
 * the host. */
gl_status gl_func_addr(gl_func *f, const void **out_addr);

/* The same for functions whose parameters and result are all i64/ptr (or
 * that return nothing); GL_ERR_SIGNATURE otherwise. */
gl_status gl_func_call_i64(gl_func *f, const int64_t *args, size_t nargs, int64_t *out_result);

/* Frees a function handle. */
gl_status gl_func_free(gl_func *f);

#ifdef __cplusplus
}
#endif

#endif /* GUARDLIFT_H */
