/*
 * pyish — a tiny Python-like bytecode interpreter that uses guardlift as its
 * JIT backend through the C API (guardlift.h).
 *
 * Objects are laid out like CPython 3.12's: a 32-byte pre-header before the
 * object pointer holding [weakref list][dict-or-values][gc_next][gc_prev],
 * so the managed-dict word is at obj - 24 (`layout cpython312`). The word is
 * either a values array tagged as `values - 1` (low bits 0b111) or a pointer
 * to a real dict (pyish's own open-addressing table, 8-aligned), or 0.
 * The values array is preceded by its capacity (u64 at values - 8), as
 * guardlift's layout says (spec §4).
 */
#ifndef PYISH_H
#define PYISH_H

#include <stddef.h>
#include <stdint.h>

#include "guardlift.h"

/* ---- objects (objects.c) -------------------------------------------------- */

typedef struct TypeObject {
    const char *tp_name;
    size_t n_shared_keys;            /* split-keys table shared by all instances */
    const char *const *shared_keys;
} TypeObject;

typedef struct Object {              /* PyObject */
    int64_t ob_refcnt;
    TypeObject *ob_type;
    /* Allocator bookkeeping, not part of the object model: the memory block
     * of the values array this object owns (NULL once it has a dict). pyish
     * frees through it when the dict word was corrupted, so that the demo of
     * a corruption stays leak-free under valgrind. */
    void *alloc_values_mem;
    uint64_t gl_id;                  /* guardlift's allocation id (0: not registered) */
} Object;

/* CPython 3.12: the pre-header is [weakref][dict_or_values][gc_next][gc_prev]. */
#define PRE_HEADER_SIZE 32
#define DICT_OR_VALUES_OFFSET (-24)  /* _PyObject_DictOrValuesPointer(obj) == obj - 24 */

static inline uint64_t *dict_or_values(Object *o) {
    return (uint64_t *)((char *)o + DICT_OR_VALUES_OFFSET);
}

typedef struct DictEntry {
    const char *key;                 /* interned; NULL = empty */
    int64_t value;
} DictEntry;

typedef struct DictObject {          /* a real dict: what the word points to in dict mode */
    int64_t ob_refcnt;
    TypeObject *ob_type;
    size_t used;
    size_t mask;                     /* capacity - 1 (a power of two) */
    DictEntry *entries;
} DictObject;

extern TypeObject DictType;

/* Registers every object made from now on with `rt` and reports its free
 * (gl_runtime_register_object / gl_runtime_object_freed), as tp_alloc and
 * tp_dealloc hooks would. */
void objects_attach(gl_runtime *rt);
Object *object_new(TypeObject *tp);
/* tp_dealloc: the memory goes to a free list and is reused by the next object. */
void object_free(Object *o);
/* Frees the free list (at exit). */
void objects_drain_freelist(void);
/* Switches an object to dict mode, keeping its attributes (what touching
 * `obj.__dict__` does in CPython 3.12). */
void object_materialize_dict(Object *o);
int64_t object_get_attr(Object *o, size_t key_index);
void object_set_attr(Object *o, size_t key_index, int64_t v);
/* 1 if the object's word is values-tagged, 0 if dict/empty. */
int object_has_values(Object *o);

/* How many times a slow path found a word that is neither a values array
 * nor a dict (CPython would have dereferenced it and crashed). */
extern unsigned long corrupt_words_refused;

/* Host functions the compiled code calls (declared `extern fn` in the IR). */
int64_t interp_dict_get(Object *o, int64_t key_index);
void interp_dict_set(Object *o, int64_t key_index, int64_t v);
void interp_incref(Object *o);
void interp_incref_buggy(Object *o);
/* Rogue increfs that clear the tag bit once (--rogue byte|word): a 1-byte
 * and an 8-byte store, for hardware watchpoints to tell apart. */
void interp_incref_clear_tag_byte(Object *o);
void interp_incref_clear_tag_word(Object *o);
void interp_decref(Object *o);
/* The buggy incref fires on its first call at or after this many calls,
 * on an object with inline values. */
extern unsigned long bug_at_call;

/* ---- bytecode (vm.c) ----------------------------------------------------- */

enum Opcode {
    LOAD_CONST,        /* push consts[arg] */
    LOAD_FAST,         /* push locals[arg] */
    STORE_FAST,        /* locals[arg] = pop */
    LOAD_ATTR,         /* obj = pop; push obj.<names[arg]> */
    STORE_ATTR,        /* obj = pop; v = pop; obj.<names[arg]> = v */
    BINARY_ADD,
    BINARY_SUB,
    BINARY_MUL,
    COMPARE_LT,        /* pushes 0 or 1 */
    POP_JUMP_IF_FALSE, /* if !pop: pc = arg */
    JUMP,              /* pc = arg */
    CALL_HELPER,       /* obj = pop; helpers[arg](obj) — 0: incref, 1: decref */
    RETURN_VALUE
};

typedef struct Instr {
    uint8_t op;
    int32_t arg;
} Instr;

typedef struct CodeObject {
    const char *name;
    int nargs;
    int nlocals;
    const Instr *code;
    size_t len;
    const int64_t *consts;
    const char *const *names;        /* attribute names */
    TypeObject *attr_type;           /* the class whose split keys names[] index (what the
                                        specializing interpreter's inline cache would record) */
    /* JIT state */
    unsigned calls;
    int jit_failed;
    gl_func *compiled;
    char *ir_text;                   /* the IR the JIT generated (owned) */
} CodeObject;

typedef struct VM {
    int use_jit;
    int instrument;
    unsigned hot_threshold;
    gl_runtime *rt;
    const char *dump_ir_path;
    int verbose;
} VM;

extern void (*helpers[2])(Object *);

int64_t vm_call(VM *vm, CodeObject *co, const int64_t *args);

/* ---- the JIT (jit.c) -------------------------------------------------------- */

/* Translates `co` to guardlift IR text (malloc'd) or returns NULL and sets *why. */
char *jit_translate(const CodeObject *co, const char **why);
/* Translates, parses, instruments (if vm->instrument), compiles and looks up
 * the function; returns 0 on success. */
int jit_compile(VM *vm, CodeObject *co);
/* Prints a guardlift report with the IR line it names. */
void jit_print_report(const gl_report *r, const char *ir_text);

#endif
