/* pyish's JIT: bytecode -> guardlift IR text -> guardlift C API.
 *
 * Attribute access in the generated IR. guardlift's `load_attr`/`store_attr`
 * take their fast path on a values-tagged word and otherwise call the
 * runtime's built-in `load_attr_slow`/`store_attr_slow`, which serve the
 * objects of guardlift's own model heap; an embedder cannot rebind them
 * (gl_runtime_add_symbol refuses built-in names). pyish's objects and dicts
 * are its own, so each LOAD_ATTR becomes
 *
 *     %w = dict_slot.load %obj              ; the managed-dict word (checked)
 *     %t = band %w, 1                       ; values-tagged?
 *     brif %t, values, dict
 *   values:  %v = load_attr %obj, K         ; guardlift's inline fast path
 *   dict:    %v = call @interp_dict_get(%obj, K)   ; pyish's own dict code
 *
 * and STORE_ATTR likewise with store_attr / @interp_dict_set. Under
 * instrumentation the dict check guards dict_slot.load, load_attr and
 * store_attr, so a corrupted word is reported at the first of them that
 * reads it, before pyish's dict code sees it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyish.h"

typedef struct Buf {
    char *p;
    size_t len, cap;
} Buf;

static void bprintf(Buf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0) return;
        if (b->p && (size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + (size_t)n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            fprintf(stderr, "pyish: out of memory\n");
            exit(2);
        }
        b->p = p;
        b->cap = cap;
    }
}

static const char *const opnames[] = {
    "LOAD_CONST", "LOAD_FAST",  "STORE_FAST", "LOAD_ATTR",         "STORE_ATTR",
    "BINARY_ADD", "BINARY_SUB", "BINARY_MUL", "COMPARE_LT",        "POP_JUMP_IF_FALSE",
    "JUMP",       "CALL_HELPER", "RETURN_VALUE",
};
static const char *const helper_names[] = {"interp_incref", "interp_decref"};

#define MAX_LOCALS 16
#define MAX_STACK 64
typedef char Name[48];

typedef struct Tr {
    const CodeObject *co;
    Buf b;
    unsigned next;            /* next %vN */
    Name locals[MAX_LOCALS];
    Name stack[MAX_STACK];
    int sp;
    char comment[96];
} Tr;

/* One instruction line, with the bytecode it came from as a comment. */
static void emit(Tr *t, const char *fmt, ...) {
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    bprintf(&t->b, "    %-44s ; %s\n", line, t->comment);
}

static const char *fresh(Tr *t, Name out) {
    snprintf(out, sizeof(Name), "%%v%u", t->next++);
    return out;
}

static void jump_args(Tr *t, Buf *b) {
    for (int j = 0; j < t->co->nlocals; j++) bprintf(b, "%s%s", j ? ", " : "", t->locals[j]);
}

static void emit_jump(Tr *t, size_t target) {
    Buf args = {0};
    bprintf(&args, "%s", "");
    jump_args(t, &args);
    emit(t, "jump bc%zu(%s)", target, args.p);
    free(args.p);
}

static int attr_key(const CodeObject *co, int32_t name, size_t *out) {
    const TypeObject *tp = co->attr_type;
    for (size_t i = 0; i < tp->n_shared_keys; i++)
        if (tp->shared_keys[i] == co->names[name]) {
            *out = i;
            return 0;
        }
    return -1;
}

char *jit_translate(const CodeObject *co, const char **why) {
    size_t n = co->len;
    if (co->nlocals > MAX_LOCALS) {
        *why = "too many locals";
        return NULL;
    }
    char *leader = calloc(n + 1, 1);
    if (!leader) exit(2);
    leader[0] = 1;
    for (size_t pc = 0; pc < n; pc++) {
        const Instr in = co->code[pc];
        if (in.op == JUMP || in.op == POP_JUMP_IF_FALSE) {
            if (in.arg < 0 || (size_t)in.arg >= n) {
                free(leader);
                *why = "jump out of range";
                return NULL;
            }
            leader[in.arg] = 1;
        }
        if (in.op == JUMP || in.op == POP_JUMP_IF_FALSE || in.op == RETURN_VALUE) leader[pc + 1] = 1;
    }

    Tr t;
    memset(&t, 0, sizeof t);
    t.co = co;
    Buf *b = &t.b;
    bprintf(b, "; %s, translated by pyish from its bytecode after %u interpreted calls\n", co->name,
            co->calls);
    bprintf(b, "layout cpython312\n");
    bprintf(b, "extern fn @interp_dict_get(ptr, i64) -> i64\n");
    bprintf(b, "extern fn @interp_dict_set(ptr, i64, i64)\n");
    bprintf(b, "extern fn @interp_incref(ptr)\n");
    bprintf(b, "extern fn @interp_decref(ptr)\n\n");
    bprintf(b, "fn @%s(", co->name);
    for (int i = 0; i < co->nargs; i++) bprintf(b, "%s%%a%d: i64", i ? ", " : "", i);
    bprintf(b, ") -> i64 {\nentry:\n");
    snprintf(t.comment, sizeof t.comment, "arguments, locals = 0");
    for (int j = 0; j < co->nlocals; j++) {
        if (j < co->nargs) {
            snprintf(t.locals[j], sizeof(Name), "%%a%d", j);
        } else {
            fresh(&t, t.locals[j]);
            emit(&t, "%s = iconst.i64 0", t.locals[j]);
        }
    }
    emit_jump(&t, 0);

    int terminated = 1;
    const char *err = NULL;
    for (size_t pc = 0; pc < n && !err; pc++) {
        const Instr in = co->code[pc];
        if (leader[pc]) {
            if (!terminated) {
                if (t.sp) {
                    err = "stack not empty at a block boundary";
                    break;
                }
                emit_jump(&t, pc);
            }
            bprintf(b, "bc%zu(", pc);
            for (int j = 0; j < co->nlocals; j++) {
                snprintf(t.locals[j], sizeof(Name), "%%l%d_%zu", j, pc);
                bprintf(b, "%s%s: i64", j ? ", " : "", t.locals[j]);
            }
            bprintf(b, "):\n");
            t.sp = 0;
            terminated = 0;
        }
        if (terminated) continue; /* unreachable */
        snprintf(t.comment, sizeof t.comment, "bc %zu %s %d", pc, opnames[in.op], in.arg);
        Name v, w, c;
        switch (in.op) {
        case LOAD_CONST:
            if (t.sp >= MAX_STACK) { err = "stack overflow"; break; }
            emit(&t, "%s = iconst.i64 %lld", fresh(&t, v), (long long)co->consts[in.arg]);
            strcpy(t.stack[t.sp++], v);
            break;
        case LOAD_FAST:
            if (t.sp >= MAX_STACK) { err = "stack overflow"; break; }
            strcpy(t.stack[t.sp++], t.locals[in.arg]);
            break;
        case STORE_FAST:
            if (t.sp < 1) { err = "stack underflow"; break; }
            strcpy(t.locals[in.arg], t.stack[--t.sp]);
            break;
        case BINARY_ADD:
        case BINARY_SUB:
        case BINARY_MUL: {
            if (t.sp < 2) { err = "stack underflow"; break; }
            const char *op = in.op == BINARY_ADD ? "iadd" : in.op == BINARY_SUB ? "isub" : "imul";
            t.sp--;
            emit(&t, "%s = %s %s, %s", fresh(&t, v), op, t.stack[t.sp - 1], t.stack[t.sp]);
            strcpy(t.stack[t.sp - 1], v);
            break;
        }
        case COMPARE_LT:
            if (t.sp < 2) { err = "stack underflow"; break; }
            t.sp--;
            emit(&t, "%s = icmp.slt %s, %s", fresh(&t, c), t.stack[t.sp - 1], t.stack[t.sp]);
            emit(&t, "%s = uext.i64 %s", fresh(&t, v), c);
            strcpy(t.stack[t.sp - 1], v);
            break;
        case LOAD_ATTR:
        case STORE_ATTR: {
            size_t key;
            if (t.sp < (in.op == LOAD_ATTR ? 1 : 2)) { err = "stack underflow"; break; }
            if (attr_key(co, in.arg, &key)) { err = "attribute not in the class's split keys"; break; }
            snprintf(t.comment, sizeof t.comment, "bc %zu %s %s", pc, opnames[in.op], co->names[in.arg]);
            Name obj, one, tag, k;
            strcpy(obj, t.stack[--t.sp]);
            const char *pre = in.op == LOAD_ATTR ? "la" : "sa";
            emit(&t, "%s = dict_slot.load %s", fresh(&t, w), obj);
            emit(&t, "%s = iconst.i64 1", fresh(&t, one));
            emit(&t, "%s = band %s, %s", fresh(&t, tag), w, one);
            emit(&t, "brif %s, %s%zu_values, %s%zu_dict", tag, pre, pc, pre, pc);
            if (in.op == LOAD_ATTR) {
                Name fast, slow;
                bprintf(b, "la%zu_values:\n", pc);
                emit(&t, "%s = load_attr %s, %zu", fresh(&t, fast), obj, key);
                emit(&t, "jump la%zu_done(%s)", pc, fast);
                bprintf(b, "la%zu_dict:\n", pc);
                emit(&t, "%s = iconst.i64 %zu", fresh(&t, k), key);
                emit(&t, "%s = call @interp_dict_get(%s, %s)", fresh(&t, slow), obj, k);
                emit(&t, "jump la%zu_done(%s)", pc, slow);
                bprintf(b, "la%zu_done(%s: i64):\n", pc, fresh(&t, v));
                strcpy(t.stack[t.sp++], v);
            } else {
                Name val;
                strcpy(val, t.stack[--t.sp]);
                bprintf(b, "sa%zu_values:\n", pc);
                emit(&t, "store_attr %s, %zu, %s", obj, key, val);
                emit(&t, "jump sa%zu_done", pc);
                bprintf(b, "sa%zu_dict:\n", pc);
                emit(&t, "%s = iconst.i64 %zu", fresh(&t, k), key);
                emit(&t, "call @interp_dict_set(%s, %s, %s)", obj, k, val);
                emit(&t, "jump sa%zu_done", pc);
                bprintf(b, "sa%zu_done:\n", pc);
            }
            break;
        }
        case CALL_HELPER:
            if (t.sp < 1) { err = "stack underflow"; break; }
            if (in.arg < 0 || in.arg > 1) { err = "unknown helper"; break; }
            emit(&t, "call @%s(%s)", helper_names[in.arg], t.stack[--t.sp]);
            break;
        case POP_JUMP_IF_FALSE: {
            if (t.sp != 1) { err = "stack not empty at a branch"; break; }
            Buf args = {0};
            bprintf(&args, "%s", "");
            jump_args(&t, &args);
            emit(&t, "brif %s, bc%zu(%s), bc%d(%s)", t.stack[0], pc + 1, args.p, in.arg, args.p);
            free(args.p);
            t.sp = 0;
            terminated = 1;
            break;
        }
        case JUMP:
            if (t.sp != 0) { err = "stack not empty at a jump"; break; }
            emit_jump(&t, (size_t)in.arg);
            terminated = 1;
            break;
        case RETURN_VALUE:
            if (t.sp != 1) { err = "stack not empty at return"; break; }
            emit(&t, "return %s", t.stack[0]);
            t.sp = 0;
            terminated = 1;
            break;
        default:
            err = "unknown opcode";
        }
    }
    if (!err && !terminated) err = "code falls off its end";
    free(leader);
    if (err) {
        free(b->p);
        *why = err;
        return NULL;
    }
    bprintf(b, "}\n");
    return b->p;
}

int jit_compile(VM *vm, CodeObject *co) {
    const char *why = NULL;
    char *ir = jit_translate(co, &why);
    if (!ir) {
        fprintf(stderr, "pyish: cannot compile %s: %s; it stays interpreted\n", co->name, why);
        return -1;
    }
    if (vm->dump_ir_path) {
        FILE *f = fopen(vm->dump_ir_path, "w");
        if (f) {
            fputs(ir, f);
            fclose(f);
        } else {
            fprintf(stderr, "pyish: cannot write %s\n", vm->dump_ir_path);
        }
    }
    char fname[64];
    snprintf(fname, sizeof fname, "<jit:%s>", co->name);
    gl_module *m = NULL;
    gl_code *code = NULL;
    gl_func *f = NULL;
    gl_type params[MAX_LOCALS];
    for (int i = 0; i < co->nargs; i++) params[i] = GL_TYPE_I64;
    gl_status st = gl_module_parse(ir, fname, &m);
    if (st == GL_OK && vm->instrument) st = gl_module_instrument(m, GL_CHECK_ALL);
    if (st == GL_OK) st = gl_compile(vm->rt, m, &code);
    if (st == GL_OK) st = gl_code_get_func(code, co->name, params, (size_t)co->nargs, GL_TYPE_I64, &f);
    if (st != GL_OK) fprintf(stderr, "pyish: guardlift: %s: %s\n", gl_status_name(st), gl_last_error());
    /* The function handle keeps the code alive; module and code handles can go. */
    gl_module_free(m);
    gl_code_free(code);
    if (st != GL_OK) {
        free(ir);
        return -1;
    }
    co->compiled = f;
    co->ir_text = ir;
    return 0;
}

/* Copies line `line` (1-based) of `text` into out. */
static void ir_line(const char *text, uint32_t line, char *out, size_t cap) {
    out[0] = 0;
    if (!text) return;
    for (uint32_t l = 1; l < line && *text; text++)
        if (*text == '\n') l++;
    size_t i = 0;
    while (text[i] && text[i] != '\n' && i + 1 < cap) {
        out[i] = text[i];
        i++;
    }
    out[i] = 0;
}

void jit_print_report(const gl_report *r, const char *ir_text) {
    char line[512];
    /* As guardlift's own report: a writer known only by its function has no
     * line, and a report with no guard site (foreign_write) no site id. */
    fprintf(stderr, "==pyish== guardlift report: %s in @%s", r->kind_name, r->function);
    if (r->line != 0 || r->site != GL_NO_SITE) fprintf(stderr, " at IR line %u:%u (%s)", r->line, r->col, r->op);
    if (r->site != GL_NO_SITE) fprintf(stderr, ", site %u", r->site);
    fputc('\n', stderr);
    if (r->kind == GL_REPORT_DICT_SLOT_TAG)
        fprintf(stderr, "==pyish==   object %#llx: managed-dict word %#llx (low bits 0b%d%d%d)\n",
                (unsigned long long)r->object, (unsigned long long)r->value, (int)(r->value >> 2 & 1),
                (int)(r->value >> 1 & 1), (int)(r->value & 1));
    if (r->object_id)
        fprintf(stderr, "==pyish==   object %#llx, allocation id %llu%s\n", (unsigned long long)r->object,
                (unsigned long long)r->object_id,
                r->kind == GL_REPORT_USE_AFTER_FREE ? " (freed by the host)" : "");
    /* Where the host registered and freed it (GUARDLIFT_OPTIONS=host_stacks=1). */
    for (uint32_t which = GL_STACK_ALLOC; which <= GL_STACK_FREE; which++) {
        const char *frame = NULL;
        size_t n = 0;
        if (gl_report_get_object_stack(r, which, 0, &frame, &n) != GL_OK || n == 0) continue;
        fprintf(stderr, "==pyish==   %s by the host at:\n", which == GL_STACK_ALLOC ? "allocated" : "freed");
        for (size_t i = 0; i < n; i++) {
            if (gl_report_get_object_stack(r, which, i, &frame, &n) != GL_OK || !frame) break;
            fprintf(stderr, "==pyish==     #%zu %s\n", i, frame);
        }
    }
    if (r->kind == GL_REPORT_ATTR_OUT_OF_BOUNDS)
        fprintf(stderr, "==pyish==   attribute %llu of %llu\n", (unsigned long long)r->index,
                (unsigned long long)r->capacity);
    ir_line(ir_text, r->line, line, sizeof line);
    if (line[0]) fprintf(stderr, "==pyish==   IR %u: %s\n", r->line, line);
}
