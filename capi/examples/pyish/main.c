/* pyish: a Python-like interpreter whose hot functions run as guardlift code.
 *
 *   pyish [--instrument] [--buggy] [--rogue byte|word] [--recycle] [--no-jit]
 *         [--mode recover|abort|trap] [--hot N] [--rounds N] [--iters N] [--bug-at N]
 *         [--dump-ir FILE]
 *   pyish --selftest
 *
 * The program (bytecode below) is
 *
 *     class Point: x, y, total           # split keys
 *     def step(p, n):
 *         i = 0
 *         while i < n:
 *             incref(p)                  # a host helper; --buggy swaps in a buggy one
 *             p.total = p.total + p.x * p.y
 *             p.x = p.x + 1
 *             decref(p)
 *             i = i + 1
 *         return p.total
 *     p = Point(x=1, y=2)                # inline values
 *     q = Point(x=3, y=5); q.__dict__    # a real dict
 *     for _ in range(rounds): step(p, iters); step(q, iters)
 *
 * With --rogue byte|word, incref is a rogue host writer in C that clears
 * the tag bit of p's managed-dict word once (a 1-byte or an 8-byte store);
 * run with GUARDLIFT_OPTIONS=watch=object:1 (p is the first object
 * registered), guardlift's hardware watchpoint reports it as foreign_write
 * naming the C symbol, the store's width and the IR call in its backtrace
 * (printed as JSON after the report list).
 *
 * With --recycle, a temporary `t = Point(x=7, y=1)` is stepped and freed,
 * a stale reference to it (the launch-context bug) steps it once more, and
 * `u = Point(x=3, y=4)` reuses its memory (pyish keeps a free list, as
 * CPython does). Every object is registered with guardlift when made and
 * reported freed in its dealloc, so with --instrument the stale step is
 * refused and reported as use_after_free with t's allocation id, while u
 * (same address, a new id) runs clean.
 *
 * `step` runs interpreted until it has been called --hot times, then it is
 * translated to guardlift IR, compiled and called natively from then on.
 * With --instrument, guardlift checks every managed-dict access of the
 * compiled code (recover mode) and the report callback prints each report
 * with the IR line it names (GUARDLIFT_OPTIONS, e.g. report_limit=1 or
 * log_path=FILE, is passed to gl_runtime_configure). Exit status: 0, or 1 if guardlift recorded
 * reports, 2 on errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyish.h"

static const char *const point_keys[] = {"x", "y", "total"};
static TypeObject PointType = {"Point", 3, point_keys};

static const int64_t step_consts[] = {0, 1};
static const Instr step_code[] = {
    /*  0 */ {LOAD_CONST, 0},
    /*  1 */ {STORE_FAST, 2},        /* i = 0 */
    /*  2 */ {LOAD_FAST, 2},
    /*  3 */ {LOAD_FAST, 1},
    /*  4 */ {COMPARE_LT, 0},
    /*  5 */ {POP_JUMP_IF_FALSE, 31}, /* while i < n */
    /*  6 */ {LOAD_FAST, 0},
    /*  7 */ {CALL_HELPER, 0},       /* incref(p) */
    /*  8 */ {LOAD_FAST, 0},
    /*  9 */ {LOAD_ATTR, 2},         /* p.total */
    /* 10 */ {LOAD_FAST, 0},
    /* 11 */ {LOAD_ATTR, 0},         /* p.x */
    /* 12 */ {LOAD_FAST, 0},
    /* 13 */ {LOAD_ATTR, 1},         /* p.y */
    /* 14 */ {BINARY_MUL, 0},
    /* 15 */ {BINARY_ADD, 0},
    /* 16 */ {LOAD_FAST, 0},
    /* 17 */ {STORE_ATTR, 2},        /* p.total = ... */
    /* 18 */ {LOAD_FAST, 0},
    /* 19 */ {LOAD_ATTR, 0},
    /* 20 */ {LOAD_CONST, 1},
    /* 21 */ {BINARY_ADD, 0},
    /* 22 */ {LOAD_FAST, 0},
    /* 23 */ {STORE_ATTR, 0},        /* p.x = p.x + 1 */
    /* 24 */ {LOAD_FAST, 0},
    /* 25 */ {CALL_HELPER, 1},       /* decref(p) */
    /* 26 */ {LOAD_FAST, 2},
    /* 27 */ {LOAD_CONST, 1},
    /* 28 */ {BINARY_ADD, 0},
    /* 29 */ {STORE_FAST, 2},        /* i = i + 1 */
    /* 30 */ {JUMP, 2},
    /* 31 */ {LOAD_FAST, 0},
    /* 32 */ {LOAD_ATTR, 2},
    /* 33 */ {RETURN_VALUE, 0},
};

static CodeObject step = {
    .name = "step",
    .nargs = 2,
    .nlocals = 3,
    .code = step_code,
    .len = sizeof step_code / sizeof step_code[0],
    .consts = step_consts,
    .names = point_keys,
    .attr_type = &PointType,
};

static CodeObject *all_codes[] = {&step, NULL};

/* The report callback: the first occurrence of each (site, kind), with the
 * line of the IR the JIT generated that the site names. */
static void on_report(const gl_report *r, void *user_data) {
    CodeObject **codes = user_data;
    if (r->count != 1) return;
    const char *ir = NULL;
    for (; *codes; codes++)
        if (strcmp((*codes)->name, r->function) == 0) ir = (*codes)->ir_text;
    jit_print_report(r, ir);
}

static int selftest(void);

static unsigned long arg_num(const char *s) {
    char *end;
    unsigned long v = strtoul(s, &end, 0);
    if (!*s || *end) {
        fprintf(stderr, "pyish: `%s` is not a number\n", s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv) {
    VM vm = {.use_jit = 1, .hot_threshold = 4};
    int buggy = 0, recycle = 0;
    const char *rogue = NULL;
    gl_mode mode = GL_MODE_RECOVER;
    unsigned long rounds = 20, iters = 50;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--instrument")) vm.instrument = 1;
        else if (!strcmp(a, "--buggy")) buggy = 1;
        else if (!strcmp(a, "--recycle")) recycle = 1;
        else if (!strcmp(a, "--no-jit")) vm.use_jit = 0;
        else if (!strcmp(a, "--selftest")) return selftest();
        else if (next && !strcmp(a, "--mode")) {
            i++;
            if (!strcmp(next, "recover")) mode = GL_MODE_RECOVER;
            else if (!strcmp(next, "abort")) mode = GL_MODE_ABORT;
            else if (!strcmp(next, "trap")) mode = GL_MODE_TRAP;
            else { fprintf(stderr, "pyish: unknown mode %s\n", next); return 2; }
        } else if (next && !strcmp(a, "--rogue")) rogue = argv[++i];
        else if (next && !strcmp(a, "--hot")) vm.hot_threshold = (unsigned)arg_num(argv[++i]);
        else if (next && !strcmp(a, "--rounds")) rounds = arg_num(argv[++i]);
        else if (next && !strcmp(a, "--iters")) iters = arg_num(argv[++i]);
        else if (next && !strcmp(a, "--bug-at")) bug_at_call = arg_num(argv[++i]);
        else if (next && !strcmp(a, "--dump-ir")) vm.dump_ir_path = argv[++i];
        else {
            fprintf(stderr, "usage: pyish [--instrument] [--buggy] [--rogue byte|word] [--recycle] [--no-jit]\n"
                            "             [--mode recover|abort|trap] [--hot N]\n"
                            "             [--rounds N] [--iters N] [--bug-at N] [--dump-ir FILE] | --selftest\n");
            return 2;
        }
    }
    if (gl_report_struct_size() != sizeof(gl_report)) {
        fprintf(stderr, "pyish: guardlift.h does not match the library\n");
        return 2;
    }
    if (buggy) helpers[0] = interp_incref_buggy;
    if (rogue && !strcmp(rogue, "byte")) helpers[0] = interp_incref_clear_tag_byte;
    else if (rogue && !strcmp(rogue, "word")) helpers[0] = interp_incref_clear_tag_word;
    else if (rogue) {
        fprintf(stderr, "pyish: --rogue takes byte or word, not %s\n", rogue);
        return 2;
    }

    /* The JIT backend: objects are CPython 3.12's, so the layout is cpython312. */
    if (gl_runtime_new("cpython312", mode, &vm.rt) != GL_OK ||
        gl_runtime_add_symbol(vm.rt, "interp_dict_get", (gl_host_fn)interp_dict_get) != GL_OK ||
        gl_runtime_add_symbol(vm.rt, "interp_dict_set", (gl_host_fn)interp_dict_set) != GL_OK ||
        gl_runtime_add_symbol(vm.rt, "interp_incref", (gl_host_fn)helpers[0]) != GL_OK ||
        gl_runtime_add_symbol(vm.rt, "interp_decref", (gl_host_fn)interp_decref) != GL_OK ||
        gl_runtime_set_report_callback(vm.rt, on_report, all_codes) != GL_OK ||
        (getenv("GUARDLIFT_OPTIONS") && gl_runtime_configure(vm.rt, getenv("GUARDLIFT_OPTIONS")) != GL_OK)) {
        fprintf(stderr, "pyish: guardlift: %s\n", gl_last_error());
        return 2;
    }
    /* tp_alloc / tp_dealloc hooks: guardlift knows every object's lifetime. */
    objects_attach(vm.rt);

    Object *p = object_new(&PointType);
    object_set_attr(p, 0, 1);
    object_set_attr(p, 1, 2);
    Object *q = object_new(&PointType);
    object_set_attr(q, 0, 3);
    object_set_attr(q, 1, 5);
    object_materialize_dict(q);

    int64_t last_p = 0, last_q = 0;
    for (unsigned long r = 0; r < rounds; r++) {
        int64_t args_p[2] = {(int64_t)(uintptr_t)p, (int64_t)iters};
        int64_t args_q[2] = {(int64_t)(uintptr_t)q, (int64_t)iters};
        last_p = vm_call(&vm, &step, args_p);
        last_q = vm_call(&vm, &step, args_q);
    }
    printf("pyish: step(p) = %lld, step(q) = %lld\n", (long long)last_p, (long long)last_q);
    printf("pyish: p.x = %lld, p.total = %lld, q.x = %lld, q.total = %lld, refcounts %lld %lld\n",
           (long long)object_get_attr(p, 0), (long long)object_get_attr(p, 2), (long long)object_get_attr(q, 0),
           (long long)object_get_attr(q, 2), (long long)p->ob_refcnt, (long long)q->ob_refcnt);
    if (corrupt_words_refused)
        printf("pyish: the dict slow path refused %lu access(es) through a corrupt managed-dict word "
               "(CPython would have crashed there)\n",
               corrupt_words_refused);

    if (recycle) {
        Object *t = object_new(&PointType);
        object_set_attr(t, 0, 7);
        object_set_attr(t, 1, 1);
        int64_t args_t[2] = {(int64_t)(uintptr_t)t, 3};
        int64_t first = vm_call(&vm, &step, args_t);
        uint64_t t_id = t->gl_id;
        object_free(t);
        /* The bug: a context still holds t and steps it after the free. */
        int64_t stale = vm_call(&vm, &step, args_t);
        Object *u = object_new(&PointType); /* reuses t's memory */
        object_set_attr(u, 0, 3);
        object_set_attr(u, 1, 4);
        int64_t args_u[2] = {(int64_t)(uintptr_t)u, 3};
        int64_t fresh = vm_call(&vm, &step, args_u);
        printf("pyish: recycle: step(t) = %lld, stale step(t) = %lld, step(u) = %lld; u %s t's address; ids %llu and %llu\n",
               (long long)first, (long long)stale, (long long)fresh, (void *)u == (void *)t ? "reuses" : "does not reuse",
               (unsigned long long)t_id, (unsigned long long)u->gl_id);
        object_free(u);
    }

    /* Reports are also collected after the run. */
    gl_reports *list = NULL;
    const gl_report *items = NULL;
    size_t n = 0;
    if (gl_runtime_take_reports(vm.rt, &list, &items, &n) != GL_OK) {
        fprintf(stderr, "pyish: guardlift: %s\n", gl_last_error());
        return 2;
    }
    printf("pyish: %zu guardlift report(s)\n", n);
    for (size_t i = 0; i < n; i++) {
        printf("pyish:   %s in @%s at IR line %u:%u (%s), %llu time(s)\n", items[i].kind_name, items[i].function,
               items[i].line, items[i].col, items[i].op, (unsigned long long)items[i].count);
        /* The writer a watchpoint caught: symbol, width and backtrace are in the JSON. */
        if (items[i].kind == GL_REPORT_FOREIGN_WRITE) printf("pyish:     %s\n", items[i].json);
    }
    gl_reports_free(list);

    object_free(p);
    object_free(q);
    objects_drain_freelist();
    for (CodeObject **c = all_codes; *c; c++) {
        gl_func_free((*c)->compiled);
        free((*c)->ir_text);
    }
    gl_runtime_free(vm.rt);
    return n ? 1 : 0;
}

/* ---- a C-side tour of the API's error paths (run under valgrind by the tests) ---- */

static int checks, failures;

#define CHECK(cond)                                                                                    \
    do {                                                                                               \
        checks++;                                                                                      \
        if (!(cond)) {                                                                                 \
            failures++;                                                                                \
            fprintf(stderr, "selftest: %s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, \
                    #cond, gl_last_error());                                                           \
        }                                                                                              \
    } while (0)

static int64_t host_twice(int64_t x) { return 2 * x; }

static const char *ADD_IR = "extern fn @twice(i64) -> i64\n"
                            "fn @add2(%a: i64, %b: i64) -> i64 {\n"
                            "entry:\n"
                            "    %s = iadd %a, %b\n"
                            "    %t = call @twice(%s)\n"
                            "    return %t\n"
                            "}\n";

static const char *CORRUPT_IR = "layout cpython312\n"
                                "extern fn @obj_new(i64) -> ptr\n"
                                "extern fn @obj_free(ptr)\n"
                                "extern fn @fault_clear_lsb(ptr)\n"
                                "fn @main() -> i64 {\n"
                                "entry:\n"
                                "    %n = iconst.i64 2\n"
                                "    %o = call @obj_new(%n)\n"
                                "    call @fault_clear_lsb(%o)\n"
                                "    %v = load_attr %o, 1\n"
                                "    call @obj_free(%o)\n"
                                "    return %v\n"
                                "}\n";

static int selftest(void) {
    gl_module *m = NULL, *bad = NULL;
    gl_runtime *rt = NULL;
    gl_code *code = NULL;
    gl_func *f = NULL;

    CHECK(gl_abi_version() == GL_ABI_VERSION);
    CHECK(gl_report_struct_size() == sizeof(gl_report));
    CHECK(gl_module_parse(NULL, NULL, &m) == GL_ERR_NULL && m == NULL);
    CHECK(gl_module_parse("fn @f( {\n", "bad.glir", &bad) == GL_ERR_PARSE && bad == NULL);
    CHECK(strncmp(gl_last_error(), "bad.glir:1:", 11) == 0);
    CHECK(strcmp(gl_status_name(GL_ERR_PARSE), "GL_ERR_PARSE") == 0);

    CHECK(gl_runtime_new("phoenix", 42, &rt) == GL_ERR_ARGUMENT && rt == NULL);
    CHECK(gl_runtime_new("dict_slot_offset = -3", GL_MODE_RECOVER, &rt) == GL_ERR_ARGUMENT);
    CHECK(gl_runtime_new(NULL, GL_MODE_RECOVER, &rt) == GL_OK && rt != NULL);
    CHECK(strcmp(gl_last_error(), "") == 0);

    /* Host symbols; built-in names cannot be rebound. */
    CHECK(gl_runtime_add_symbol(rt, "load_attr_slow", (gl_host_fn)host_twice) == GL_ERR_ARGUMENT);
    CHECK(gl_runtime_add_symbol(rt, "twice", NULL) == GL_ERR_NULL);

    /* Link error first, then a successful compile. */
    CHECK(gl_module_parse(ADD_IR, "add.glir", &m) == GL_OK);
    CHECK(gl_compile(rt, m, &code) == GL_ERR_LINK && code == NULL);
    CHECK(strstr(gl_last_error(), "add.glir:1:") && strstr(gl_last_error(), "undefined symbol @twice"));
    CHECK(gl_runtime_add_symbol(rt, "@twice", (gl_host_fn)host_twice) == GL_OK);
    CHECK(gl_compile(rt, m, &code) == GL_OK);

    /* Signatures. */
    gl_type sig[4];
    size_t np = 0;
    gl_type ret = 99;
    CHECK(gl_code_signature(code, "add2", sig, 4, &np, &ret) == GL_OK && np == 2 && sig[0] == GL_TYPE_I64 &&
          ret == GL_TYPE_I64);
    gl_type one[1] = {GL_TYPE_I64};
    CHECK(gl_code_get_func(code, "add2", one, 1, GL_TYPE_I64, &f) == GL_ERR_SIGNATURE && f == NULL);
    CHECK(strstr(gl_last_error(), "(i64, i64) -> i64") != NULL);
    CHECK(gl_code_get_func(code, "nope", one, 1, GL_TYPE_I64, &f) == GL_ERR_NO_FUNCTION);
    gl_type two[2] = {GL_TYPE_I64, 77};
    CHECK(gl_code_get_func(code, "add2", two, 2, GL_TYPE_I64, &f) == GL_ERR_ARGUMENT);
    two[1] = GL_TYPE_I64;
    CHECK(gl_code_get_func(code, "@add2", two, 2, GL_TYPE_I64, &f) == GL_OK);
    CHECK(gl_code_free(code) == GL_OK); /* f keeps the code alive */
    uint64_t args[2] = {20, 1}, r = 0;
    CHECK(gl_func_call(f, args, 2, &r) == GL_OK && r == 42);
    CHECK(gl_func_call(f, args, 1, &r) == GL_ERR_ARGUMENT);
    int64_t iargs[2] = {-5, 2}, ir = 0;
    CHECK(gl_func_call_i64(f, iargs, 2, &ir) == GL_OK && ir == -6);

    /* Use after free, double free, wrong handle type. */
    CHECK(gl_code_free(code) == GL_ERR_HANDLE);
    CHECK(strstr(gl_last_error(), "freed") != NULL);
    CHECK(gl_func_free(f) == GL_OK);
    CHECK(gl_func_call(f, args, 2, &r) == GL_ERR_HANDLE);
    CHECK(gl_func_free(f) == GL_ERR_HANDLE);
    CHECK(gl_code_free((gl_code *)rt) == GL_ERR_HANDLE);
    CHECK(gl_module_free(NULL) == GL_OK);
    CHECK(gl_module_free(m) == GL_OK);
    CHECK(gl_module_instrument(m, GL_CHECK_ALL) == GL_ERR_HANDLE);

    /* Layout: a phoenix module does not compile against a cpython312 runtime until overridden. */
    CHECK(gl_module_parse("layout phoenix\nfn @z() -> i64 {\nentry:\n    %z = iconst.i64 0\n    return %z\n}\n", NULL,
                          &m) == GL_OK);
    int32_t off = 0;
    CHECK(gl_module_get_layout(m, &off) == GL_OK && off == 24);
    CHECK(gl_compile(rt, m, &code) == GL_ERR_LAYOUT);
    CHECK(gl_module_set_layout(m, "cpython312") == GL_OK);
    CHECK(gl_module_get_layout(m, &off) == GL_OK && off == -24);
    CHECK(gl_compile(rt, m, &code) == GL_OK);
    CHECK(gl_code_free(code) == GL_OK);
    CHECK(gl_module_free(m) == GL_OK);

    /* Reports collected after a run, from guardlift's own model heap. */
    CHECK(gl_module_parse(CORRUPT_IR, "corrupt.glir", &m) == GL_OK);
    CHECK(gl_module_instrument(m, 32) == GL_ERR_ARGUMENT);
    CHECK(gl_module_instrument(m, GL_CHECK_DICT) == GL_OK);
    const char *text = NULL;
    CHECK(gl_module_print(m, &text) == GL_OK && strstr(text, "guard.load_attr") != NULL);
    CHECK(gl_compile(rt, m, &code) == GL_OK);
    CHECK(gl_code_get_func(code, "main", NULL, 0, GL_TYPE_I64, &f) == GL_OK);
    CHECK(gl_func_call(f, NULL, 0, &r) == GL_OK && r == 0);
    size_t pending = 0;
    CHECK(gl_runtime_pending_reports(rt, &pending) == GL_OK && pending == 1);
    gl_reports *list = NULL;
    const gl_report *items = NULL;
    size_t n = 0;
    CHECK(gl_runtime_take_reports(rt, &list, &items, &n) == GL_OK && n == 1);
    if (n == 1) {
        CHECK(items[0].kind == GL_REPORT_DICT_SLOT_TAG && strcmp(items[0].function, "main") == 0 &&
              items[0].line == 10 && strcmp(items[0].op, "load_attr") == 0 && (items[0].value & 7) == 6);
        CHECK(items[0].has_last_write == 1 && strstr(items[0].text, "dict_slot_tag at @main 10:5") != NULL);
    }
    const gl_report *again = NULL;
    size_t n2 = 0;
    CHECK(gl_reports_get(list, &again, &n2) == GL_OK && again == items && n2 == n);
    CHECK(gl_reports_free(list) == GL_OK);
    CHECK(gl_reports_free(list) == GL_ERR_HANDLE);
    const char *fault = "unset";
    CHECK(gl_runtime_take_host_fault(rt, &fault) == GL_OK && fault == NULL);
    CHECK(gl_runtime_configure(rt, "report_limit=3:json=1") == GL_OK);

    /* Host objects: ids follow the runtime's own objects (one @obj_new ran). */
    static uint64_t host_obj[4];
    uint64_t id = 99;
    CHECK(gl_runtime_register_object(rt, NULL, &id) == GL_ERR_ARGUMENT && id == 0);
    CHECK(gl_runtime_register_object(rt, &host_obj[3], &id) == GL_OK && id == 2);
    CHECK(gl_runtime_register_object(rt, &host_obj[3], &id) == GL_ERR_ARGUMENT);
    CHECK(gl_runtime_object_freed(rt, &host_obj[3]) == GL_OK);
    CHECK(gl_runtime_object_freed(rt, &host_obj[3]) == GL_ERR_ARGUMENT);
    CHECK(gl_runtime_register_object(rt, &host_obj[3], &id) == GL_OK && id == 3);
    CHECK(gl_runtime_configure(rt, "mode=abort") == GL_ERR_ARGUMENT);

    /* Free in any order: the function keeps code and runtime alive. */
    CHECK(gl_runtime_free(rt) == GL_OK);
    CHECK(gl_func_call(f, NULL, 0, &r) == GL_OK);
    CHECK(gl_runtime_free(rt) == GL_ERR_HANDLE);
    CHECK(gl_func_free(f) == GL_OK);
    CHECK(gl_code_free(code) == GL_OK);
    CHECK(gl_module_free(m) == GL_OK);

    if (failures) {
        fprintf(stderr, "pyish selftest: %d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("pyish selftest: ok (%d checks)\n", checks);
    return 0;
}
