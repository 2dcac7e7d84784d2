/* pyish objects: CPython 3.12 layout, values arrays, real dicts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyish.h"

TypeObject DictType = {"dict", 0, NULL};
unsigned long corrupt_words_refused = 0;
unsigned long bug_at_call = 500;

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n, size);
    if (!p) {
        fprintf(stderr, "pyish: out of memory\n");
        exit(2);
    }
    return p;
}

/* ---- values arrays (CPython 3.12 new_values / free_values) ---------------- */

/* The values array is preceded by the u64 capacity guardlift's bounds
 * check reads (spec §4: at values - 8), and before that by CPython's
 * prefix, whose last byte is the prefix size (counted up to the values);
 * the bytes before it hold the insertion order (unused here). */
static uint64_t *values_new(size_t n, void **mem_out) {
    size_t prefix = ((n + 2 + 7) & ~(size_t)7) + sizeof(uint64_t); /* _Py_SIZE_ROUND_UP(size+2, 8) + capacity */
    uint8_t *mem = xcalloc(1, prefix + n * sizeof(uint64_t));
    mem[prefix - sizeof(uint64_t) - 1] = (uint8_t)prefix;
    uint64_t *values = (uint64_t *)(mem + prefix);
    values[-1] = n;
    *mem_out = mem;
    return values;
}

static void *values_mem(uint64_t *values) {
    uint8_t prefix = ((uint8_t *)values)[-(int)sizeof(uint64_t) - 1];
    return (uint8_t *)values - prefix;
}

/* The tagged word: values - 1, low bits 0b111 (values is 8-aligned). */
static uint64_t values_word(uint64_t *values) { return (uint64_t)(uintptr_t)values - 1; }
static uint64_t *word_values(uint64_t w) { return (uint64_t *)(uintptr_t)(w + 1); }

/* ---- dicts: open addressing, linear probing ------------------------------- */

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static DictObject *dict_new(void) {
    DictObject *d = xcalloc(1, sizeof *d);
    d->ob_refcnt = 1;
    d->ob_type = &DictType;
    d->mask = 7;
    d->entries = xcalloc(d->mask + 1, sizeof(DictEntry));
    return d;
}

static DictEntry *dict_find(DictObject *d, const char *key) {
    size_t i = (size_t)hash_str(key) & d->mask;
    for (;;) {
        DictEntry *e = &d->entries[i];
        if (!e->key || e->key == key || strcmp(e->key, key) == 0) return e;
        i = (i + 1) & d->mask;
    }
}

static void dict_set(DictObject *d, const char *key, int64_t v);

static void dict_grow(DictObject *d) {
    DictEntry *old = d->entries;
    size_t n = d->mask + 1;
    d->mask = n * 2 - 1;
    d->entries = xcalloc(n * 2, sizeof(DictEntry));
    d->used = 0;
    for (size_t i = 0; i < n; i++)
        if (old[i].key) dict_set(d, old[i].key, old[i].value);
    free(old);
}

static void dict_set(DictObject *d, const char *key, int64_t v) {
    DictEntry *e = dict_find(d, key);
    if (!e->key) {
        if ((d->used + 1) * 3 > (d->mask + 1) * 2) {
            dict_grow(d);
            e = dict_find(d, key);
        }
        e->key = key;
        d->used++;
    }
    e->value = v;
}

static int64_t dict_get(DictObject *d, const char *key) {
    DictEntry *e = dict_find(d, key);
    return e->key ? e->value : 0; /* a missing attribute reads as 0 in pyish */
}

static void dict_free(DictObject *d) {
    free(d->entries);
    free(d);
}

/* ---- objects ---------------------------------------------------------------- */

/* The runtime told about every object's life (tp_alloc / tp_dealloc), or NULL. */
static gl_runtime *objects_rt = NULL;

/* A free list of object blocks, as CPython keeps for small objects: a freed
 * object's memory is handed to the next new object (the same address). */
#define FREELIST_MAX 8
static char *freelist[FREELIST_MAX];
static int freelist_len = 0;

void objects_attach(gl_runtime *rt) { objects_rt = rt; }

static void guardlift_call(gl_status st, const char *what) {
    if (st != GL_OK) {
        fprintf(stderr, "pyish: guardlift: %s: %s\n", what, gl_last_error());
        exit(2);
    }
}

/* Frees what the object owns: its dict or values array. */
static void object_clear(Object *o) {
    uint64_t w = *dict_or_values(o);
    if (w && !(w & 1) && (w & 7) == 0) dict_free((DictObject *)(uintptr_t)w);
    free(o->alloc_values_mem); /* NULL once the object has a dict */
    o->alloc_values_mem = NULL;
    *dict_or_values(o) = 0;
}

Object *object_new(TypeObject *tp) {
    char *mem;
    if (freelist_len) {
        mem = freelist[--freelist_len];
        object_clear((Object *)(mem + PRE_HEADER_SIZE)); /* anything a stale user left */
        memset(mem, 0, PRE_HEADER_SIZE + sizeof(Object));
    } else {
        mem = xcalloc(1, PRE_HEADER_SIZE + sizeof(Object));
    }
    Object *o = (Object *)(mem + PRE_HEADER_SIZE);
    o->ob_refcnt = 1;
    o->ob_type = tp;
    uint64_t *values = values_new(tp->n_shared_keys, &o->alloc_values_mem);
    *dict_or_values(o) = values_word(values);
    if (objects_rt) {
        uint64_t id = 0;
        guardlift_call(gl_runtime_register_object(objects_rt, o, &id), "register_object");
        o->gl_id = id;
    }
    return o;
}

void objects_drain_freelist(void) {
    while (freelist_len) {
        char *mem = freelist[--freelist_len];
        object_clear((Object *)(mem + PRE_HEADER_SIZE)); /* anything a stale user left */
        free(mem);
    }
}

static int word_ok(uint64_t w) {
    uint64_t t = w & 7;
    return t == 0 || t == 7;
}

void object_free(Object *o) {
    /* tp_dealloc: tell guardlift first, before the memory can be reused or
     * the word rewritten (a watched word written by the host is a foreign
     * write until the object is freed). */
    if (objects_rt) guardlift_call(gl_runtime_object_freed(objects_rt, o), "object_freed");
    uint64_t w = *dict_or_values(o);
    if (!word_ok(w)) {
        fprintf(stderr,
                "pyish: object %p has a corrupt managed-dict word %#llx at dealloc; "
                "freeing its values through the allocator's record\n",
                (void *)o, (unsigned long long)w);
        *dict_or_values(o) = 0;
    }
    object_clear(o);
    char *mem = (char *)o - PRE_HEADER_SIZE;
    if (freelist_len < FREELIST_MAX) freelist[freelist_len++] = mem;
    else free(mem);
}

int object_has_values(Object *o) { return (*dict_or_values(o) & 1) != 0; }

void object_materialize_dict(Object *o) {
    uint64_t w = *dict_or_values(o);
    if (!(w & 1)) return;
    uint64_t *values = word_values(w);
    DictObject *d = dict_new();
    for (size_t i = 0; i < o->ob_type->n_shared_keys; i++)
        dict_set(d, o->ob_type->shared_keys[i], (int64_t)values[i]);
    free(values_mem(values));
    o->alloc_values_mem = NULL;
    *dict_or_values(o) = (uint64_t)(uintptr_t)d;
}

/* The interpreter's LoadAttr/StoreAttr for a known split-keys index. */
int64_t object_get_attr(Object *o, size_t key_index) {
    uint64_t w = *dict_or_values(o);
    if (w & 1) return (int64_t)word_values(w)[key_index];
    return interp_dict_get(o, (int64_t)key_index);
}

void object_set_attr(Object *o, size_t key_index, int64_t v) {
    uint64_t w = *dict_or_values(o);
    if (w & 1) {
        word_values(w)[key_index] = (uint64_t)v;
        return;
    }
    interp_dict_set(o, (int64_t)key_index, v);
}

/* ---- host functions called by compiled code ---------------------------------- */

/* The dict slow path: the word is not values-tagged. */
int64_t interp_dict_get(Object *o, int64_t key_index) {
    uint64_t w = *dict_or_values(o);
    if (w & 1) return (int64_t)word_values(w)[key_index];
    if (w == 0) return 0;
    if (!word_ok(w)) {
        /* CPython would treat w as a PyDictObject * and crash (or worse). */
        corrupt_words_refused++;
        return 0;
    }
    return dict_get((DictObject *)(uintptr_t)w, o->ob_type->shared_keys[key_index]);
}

void interp_dict_set(Object *o, int64_t key_index, int64_t v) {
    uint64_t w = *dict_or_values(o);
    if (w & 1) {
        word_values(w)[key_index] = (uint64_t)v;
        return;
    }
    if (!word_ok(w)) {
        corrupt_words_refused++;
        return;
    }
    if (w == 0) {
        DictObject *d = dict_new();
        *dict_or_values(o) = (uint64_t)(uintptr_t)d;
        w = (uint64_t)(uintptr_t)d;
    }
    dict_set((DictObject *)(uintptr_t)w, o->ob_type->shared_keys[key_index], v);
}

void interp_incref(Object *o) { o->ob_refcnt++; }

void interp_decref(Object *o) { o->ob_refcnt--; }

/* The rogue writers of the watchpoint demo (`--rogue byte|word`): incref,
 * and once, after `bug_at_call` calls, on an object with inline values,
 * clear the managed-dict word's tag bit with a store of one byte or of the
 * whole 8-byte word. guardlift's watchpoint names them, with the width. */
static int rogue_due(Object *o) {
    static unsigned long calls = 0;
    static int fired = 0;
    if (++calls >= bug_at_call && !fired && object_has_values(o)) {
        fired = 1;
        return 1;
    }
    return 0;
}

void interp_incref_clear_tag_byte(Object *o) {
    o->ob_refcnt++;
    if (rogue_due(o)) {
        volatile uint8_t *low = (volatile uint8_t *)dict_or_values(o); /* little-endian: bit 0 */
        *low = (uint8_t)(*low & ~1u);
    }
}

void interp_incref_clear_tag_word(Object *o) {
    o->ob_refcnt++;
    if (rogue_due(o)) {
        volatile uint64_t *w = dict_or_values(o);
        *w = *w & ~(uint64_t)1;
    }
}

/* A helper with a bug: once, after `bug_at_call` calls, it writes to the
 * word three slots before the object (meaning to touch a field at a
 * positive offset) and flips the managed-dict word's tag bit. */
void interp_incref_buggy(Object *o) {
    static unsigned long calls = 0;
    static int fired = 0;
    o->ob_refcnt++;
    if (++calls >= bug_at_call && !fired && object_has_values(o)) {
        fired = 1;
        ((uint64_t *)o)[-3] ^= 1; /* == *dict_or_values(o) ^= 1 */
    }
}
