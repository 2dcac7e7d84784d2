/*
 * gl_support.c: the target-side support of guardlift's ahead-of-time path.
 *
 * Linked (statically) with the object `guardlift_jit::emit_object` made for
 * the target, it provides what the object imports: the runtime ABI of
 * runtime/src/abi.rs (built-ins and instrumentation entry points), the data
 * symbol `guardlift_runtime` whose address is the hidden runtime pointer,
 * and `main`, which calls the IR entry wrapper `__gl_start` and reports to
 * the host through the line protocol of aot/src/protocol.rs on stdout.
 *
 * This is a deliberately small model of guardlift_runtime's heap
 * (runtime/src/heap.rs): objects are laid out exactly as there, the slow
 * paths give the same answers and raise the same host faults, and the
 * watch list, last-write records, allocation ids and sites, the quarantine
 * of freed objects and the lifetime and bounds reports follow the same rules
 * (spec §4, §6). Everything that
 * is a number in the runtime (slot offset, tag bits, block sizes, report
 * codes, protocol codes, ABI signatures) comes from the generated header
 * gl_layout.h; nothing is formatted for a user here: the host does that.
 *
 * The protocol output, backtraces and the signal handlers are in
 * gl_signals.c (gl_support.h is what the two share).
 *
 * usage: PROGRAM MODE QUARANTINE_BYTES_HEX [ARG_BITS_HEX...]
 *        (MODE: recover | abort | trap; freed memory held before the oldest
 *        freed object is really released)
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "gl_support.h"

/* The lowering passes this symbol's address as the runtime pointer. */
_Alignas(64) unsigned char guardlift_runtime[GL_RUNTIME_SYMBOL_BYTES];

static int g_recover; /* recover mode: report and go on */

/* Abort or trap mode after a violation: everything recorded, then `A`. */
void gl_die(void) {
    struct rlimit no_core = {0, 0};
    gl_emit_reports();
    gl_out_line(GL_EV_ABORT);
    gl_flush_out();
    setrlimit(RLIMIT_CORE, &no_core);
    abort();
}

static void oom(void) {
    /* The host sees no end marker and reports the signal. */
    gl_flush_out();
    abort();
}

/* ---- u64 -> u64 hash map (open addressing, linear probing) ---------------- */

typedef struct {
    u64 *keys;
    u64 *vals;
    unsigned char *state; /* 0 empty, 1 used, 2 deleted */
    size_t cap, used, tomb;
} map_t;

static size_t slot_of(const map_t *m, u64 k) {
    return (size_t)((k * 0x9E3779B97F4A7C15ULL) >> 17) & (m->cap - 1);
}

static void map_grow(map_t *m);

static u64 *map_get(const map_t *m, u64 k) {
    if (m->cap == 0) return NULL;
    for (size_t i = slot_of(m, k);; i = (i + 1) & (m->cap - 1)) {
        if (m->state[i] == 0) return NULL;
        if (m->state[i] == 1 && m->keys[i] == k) return &m->vals[i];
    }
}

static void map_put(map_t *m, u64 k, u64 v) {
    u64 *p = map_get(m, k);
    if (p) {
        *p = v;
        return;
    }
    if ((m->used + m->tomb + 1) * 2 > m->cap) map_grow(m);
    size_t i = slot_of(m, k);
    while (m->state[i] == 1) i = (i + 1) & (m->cap - 1);
    if (m->state[i] == 2) m->tomb--;
    m->state[i] = 1;
    m->keys[i] = k;
    m->vals[i] = v;
    m->used++;
}

static int map_del(map_t *m, u64 k) {
    u64 *p = map_get(m, k);
    if (!p) return 0;
    size_t i = (size_t)(p - m->vals);
    m->state[i] = 2;
    m->used--;
    m->tomb++;
    return 1;
}

static void map_grow(map_t *m) {
    map_t n = {0};
    n.cap = 64;
    while (n.cap < (m->used + 1) * 4) n.cap *= 2;
    n.keys = calloc(n.cap, sizeof(u64));
    n.vals = calloc(n.cap, sizeof(u64));
    n.state = calloc(n.cap, 1);
    if (!n.keys || !n.vals || !n.state) oom();
    for (size_t i = 0; i < m->cap; i++)
        if (m->state[i] == 1) map_put(&n, m->keys[i], m->vals[i]);
    free(m->keys);
    free(m->vals);
    free(m->state);
    *m = n;
}

/* ---- the model heap (runtime/src/heap.rs) --------------------------------- */

/* No site: the allocation or free did not come from an IR call site. */
#define NO_SITE UINT32_MAX

typedef struct obj_meta {
    u64 obj;
    u64 base; /* start of the allocation (<= obj) */
    u32 n_attrs;
    u64 values; /* 0: none (the capacity word is at values + GL_VALUES_CAPACITY_OFFSET) */
    u64 dict;   /* 0: none */
    u64 id;     /* allocation id: 1, 2, 3, ... */
    u32 alloc_site, free_site; /* runtime-global site ids, or NO_SITE */
    u32 freed;                 /* in quarantine */
    u32 values_only;           /* a values array obj_dictify released (n_attrs, values), no object */
    struct obj_meta *qnext;    /* quarantine: the next (younger) freed object */
} obj_meta;

typedef struct {
    u32 *idx;
    i64 *val;
    size_t len, cap;
} dict_t;

typedef struct {
    u32 code; /* GL_LW_* */
    u32 site;
    u64 value;
    u64 object_id; /* the object the write was to */
} last_write_t;

static map_t g_objects;   /* live obj -> obj_meta* */
static map_t g_freed;     /* quarantined obj -> obj_meta* */
static map_t g_freed_mem; /* 8-byte granule (addr >> 3) of quarantined memory -> obj_meta* */
static obj_meta *g_qhead, *g_qtail; /* quarantine, oldest first */
static u64 g_qbytes;                /* bytes of memory held in quarantine */
static u64 g_qlimit;                /* GUARDLIFT_OPTIONS quarantine_mb, in bytes */
static u64 g_next_id = 1;
static map_t g_dicts;     /* dict address -> dict_t* */
static map_t g_watched;   /* slot address -> the object it belongs to */
static map_t g_values;    /* live values array -> its obj_meta* (the recorded capacity) */
static map_t g_lastwrite; /* slot address -> last_write_t* */
static int g_faulted;

static u64 slot(u64 obj) { return obj + (u64)GL_DICT_SLOT_OFFSET; }
static u64 read_word(u64 addr) {
    u64 w;
    memcpy(&w, (void *)(uintptr_t)addr, 8);
    return w;
}
static void write_word(u64 addr, u64 w) { memcpy((void *)(uintptr_t)addr, &w, 8); }

static map_t g_redzones; /* 8-byte granule (addr >> 3) of a block's redzone -> obj_meta* (0: none yet) */

/* The payload bytes of a block asked for `size` bytes: whole granules, at least one. */
static u64 payload_bytes(u64 size) { return size < 8 ? 8 : (size + 7) / 8 * 8; }

/* Maps each redzone granule of the block at `p` (of `size` bytes asked) to `m`. */
static void set_redzones(u64 p, u64 size, u64 m) {
    u64 end = p + payload_bytes(size);
    for (u64 g = 0; g < GL_REDZONE_BYTES / 8; g++) {
        map_put(&g_redzones, ((p - GL_REDZONE_BYTES) >> 3) + g, m);
        map_put(&g_redzones, (end >> 3) + g, m);
    }
}

/* A block of `size` bytes (rounded up to whole granules), zeroed,
 * BLOCK_ALIGN-aligned, between two REDZONE_BYTES redzones (runtime/src/heap.rs). */
static u64 alloc_block(size_t size) {
    u64 payload = payload_bytes(size);
    size_t all = (size_t)(payload + 2 * GL_REDZONE_BYTES);
    size_t rounded = (all + GL_BLOCK_ALIGN - 1) / GL_BLOCK_ALIGN * GL_BLOCK_ALIGN;
    void *raw = aligned_alloc(GL_BLOCK_ALIGN, rounded);
    if (!raw) return 0;
    memset(raw, 0, rounded);
    u64 p = (u64)(uintptr_t)raw + GL_REDZONE_BYTES;
    set_redzones(p, size, 0);
    return p;
}

/* Gives back the block at `p` of `size` bytes asked, with its redzones. */
static void free_block(u64 p, u64 size) {
    u64 end = p + payload_bytes(size);
    for (u64 g = 0; g < GL_REDZONE_BYTES / 8; g++) {
        map_del(&g_redzones, ((p - GL_REDZONE_BYTES) >> 3) + g);
        map_del(&g_redzones, (end >> 3) + g);
    }
    free((void *)(uintptr_t)(p - GL_REDZONE_BYTES));
}

static obj_meta *known_meta(u64 obj);
static void put_site(u32 site);

/* A host fault about object `obj` (0: none). In an IR call (the thread
 * runs the entry and an IR call is on the stack): what native code would
 * crash on, so the reports recorded so far, the `F` line with the call
 * and the IR frames outside it, then the process dies (SIGABRT), as the
 * host JIT's runtime ends it. Elsewhere the first one is reported and the
 * operation does nothing. */
static void fault(u32 fn, u32 kind, u64 a, u64 b, u64 obj) {
    /* Static: once per run (g_faulted), and no stale stack below the scan. */
    static u64 frames[GL_MAX_FRAMES];
    if (g_faulted) return;
    g_faulted = 1;
    unsigned n = 0;
    u64 site = gl_host_call_site(frames, &n);
    if (site) gl_emit_reports();
    obj_meta *m = obj ? known_meta(obj) : NULL;
    gl_out_char(GL_EV_FAULT);
    gl_out_field(fn);
    gl_out_field(kind);
    gl_out_field(a);
    gl_out_field(b);
    gl_out_field(obj);
    gl_out_field(m ? m->id : 0);
    gl_out_field(m ? m->freed : 0);
    put_site(m ? m->alloc_site : NO_SITE);
    put_site(m ? m->free_site : NO_SITE);
    gl_out_code_pc(site);
    gl_out_field(n);
    for (unsigned k = 0; k < n; k++) gl_out_code_pc(frames[k]);
    gl_out_nl();
    if (site) gl_die_of_abort();
}

static obj_meta *live_meta(u64 obj) {
    u64 *p = map_get(&g_objects, obj);
    return p ? (obj_meta *)(uintptr_t)*p : NULL;
}

static u64 live_id(u64 obj) {
    obj_meta *m = live_meta(obj);
    return m ? m->id : 0;
}

static void note_write(u64 slot_addr, u32 code, u32 site, u64 value, u64 obj) {
    u64 *p = map_get(&g_lastwrite, slot_addr);
    last_write_t *w;
    if (p) {
        w = (last_write_t *)(uintptr_t)*p;
    } else {
        w = malloc(sizeof *w);
        if (!w) oom();
        map_put(&g_lastwrite, slot_addr, (u64)(uintptr_t)w);
    }
    w->code = code;
    w->site = site;
    w->value = value;
    w->object_id = live_id(obj);
}

static void forget_write(u64 slot_addr) {
    u64 *p = map_get(&g_lastwrite, slot_addr);
    if (p) {
        free((void *)(uintptr_t)*p);
        map_del(&g_lastwrite, slot_addr);
    }
}

static obj_meta *meta(u32 fn, u64 obj) {
    u64 *p = map_get(&g_objects, obj);
    if (!p) {
        fault(fn, GL_FAULT_NOT_LIVE, obj, 0, obj);
        return NULL;
    }
    return (obj_meta *)(uintptr_t)*p;
}

static dict_t *dict_of(u64 d) {
    u64 *p = map_get(&g_dicts, d);
    return p ? (dict_t *)(uintptr_t)*p : NULL;
}

static i64 *dict_find(dict_t *d, u32 i) {
    for (size_t k = 0; k < d->len; k++)
        if (d->idx[k] == i) return &d->val[k];
    return NULL;
}

static void dict_set(dict_t *d, u32 i, i64 x) {
    i64 *p = dict_find(d, i);
    if (p) {
        *p = x;
        return;
    }
    if (d->len == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 4;
        d->idx = realloc(d->idx, d->cap * sizeof(u32));
        d->val = realloc(d->val, d->cap * sizeof(i64));
        if (!d->idx || !d->val) oom();
    }
    d->idx[d->len] = i;
    d->val[d->len] = x;
    d->len++;
}

/* A new model dict object; 0 (after a fault) when out of memory. */
static u64 new_dict(void) {
    u64 d = alloc_block(GL_DICT_OBJECT_BYTES);
    if (!d) {
        fault(GL_FN_DICT, GL_FAULT_OUT_OF_MEMORY, 0, 0, 0);
        return 0;
    }
    write_word(d, GL_DICT_MAGIC);
    dict_t *t = calloc(1, sizeof *t);
    if (!t) oom();
    map_put(&g_dicts, d, (u64)(uintptr_t)t);
    return d;
}

static void set_dict(obj_meta *m, u64 obj, u64 d) {
    m->dict = d;
    set_redzones(d, GL_DICT_OBJECT_BYTES, (u64)(uintptr_t)m);
    write_word(slot(obj), d);
    note_write(slot(obj), GL_LW_DICT_CODE, 0, d, obj);
}

enum word_is { W_BAD, W_EMPTY, W_VALUES, W_DICT };

/* What the heap believes `word` is for `obj` (never trusts the word itself). */
static enum word_is classify(const obj_meta *m, u64 word) {
    if (word == 0) return W_EMPTY;
    if (m->values && word == GL_VALUES_WORD(m->values)) return W_VALUES;
    if (m->dict && word == m->dict && dict_of(word)) return W_DICT;
    return W_BAD;
}

/* Bytes of a block asked for `size` bytes (as the model heap counts them). */
static u64 block_bytes(u64 size) { return size < 8 ? 8 : size; }

/* The values block of `n` attributes: the capacity word, then the array. */
static u64 values_block_bytes(u32 n) {
    return block_bytes((u64)n * GL_ATTR_BYTES + GL_VALUES_HEADER_BYTES);
}
static u64 values_block(u64 values) { return values - GL_VALUES_HEADER_BYTES; }

/* Object block bounds relative to the object address. */
static i64 obj_lo(void) { return GL_DICT_SLOT_OFFSET < 0 ? GL_DICT_SLOT_OFFSET : 0; }
static i64 obj_hi(void) {
    return GL_DICT_SLOT_OFFSET + 8 > GL_OBJ_BODY_BYTES ? GL_DICT_SLOT_OFFSET + 8 : GL_OBJ_BODY_BYTES;
}

static u64 obj_new_at(i64 n, u32 site) {
    if (n < 0 || n > GL_MAX_OBJ_ATTRS) {
        fault(GL_FN_OBJ_NEW, GL_FAULT_COUNT_RANGE, (u64)n, 0, 0);
        return 0;
    }
    u64 base = alloc_block((size_t)(obj_hi() - obj_lo()));
    if (!base) {
        fault(GL_FN_OBJ_NEW, GL_FAULT_OUT_OF_MEMORY, 0, 0, 0);
        return 0;
    }
    u64 obj = base + (u64)(-obj_lo());
    u64 vblock = alloc_block((size_t)values_block_bytes((u32)n));
    if (!vblock) {
        free_block(base, (u64)(obj_hi() - obj_lo()));
        fault(GL_FN_OBJ_NEW, GL_FAULT_OUT_OF_MEMORY, 0, 0, 0);
        return 0;
    }
    u64 values = vblock + GL_VALUES_HEADER_BYTES;
    write_word(values + (u64)GL_VALUES_CAPACITY_OFFSET, (u64)n);
    /* Body: word 0 refcount 1, word 1 the attribute count. */
    write_word(obj, 1);
    write_word(obj + 8, (u64)n);
    obj_meta *m = calloc(1, sizeof *m);
    if (!m) oom();
    m->obj = obj;
    m->base = base;
    m->n_attrs = (u32)n;
    m->values = values;
    m->dict = 0;
    m->id = g_next_id++;
    m->alloc_site = site;
    m->free_site = NO_SITE;
    map_put(&g_objects, obj, (u64)(uintptr_t)m);
    set_redzones(base, (u64)(obj_hi() - obj_lo()), (u64)(uintptr_t)m);
    set_redzones(vblock, values_block_bytes((u32)n), (u64)(uintptr_t)m);
    u64 word = GL_VALUES_WORD(values);
    write_word(slot(obj), word);
    note_write(slot(obj), GL_LW_OBJ_NEW, 0, word, obj);
    map_put(&g_watched, slot(obj), obj);
    map_put(&g_values, values, (u64)(uintptr_t)m);
    map_put(&g_watched, values + (u64)GL_VALUES_CAPACITY_OFFSET, obj);
    return obj;
}

/* The values array of `m` is released: its record and its capacity word's watch go. */
static void forget_values(obj_meta *m) {
    if (!m->values) return;
    map_del(&g_values, m->values);
    map_del(&g_watched, m->values + (u64)GL_VALUES_CAPACITY_OFFSET);
}

uint64_t gl_obj_new(void *rt, uint64_t n_bits) {
    (void)rt;
    return obj_new_at((i64)n_bits, NO_SITE);
}

uint64_t gl_obj_new_at(void *rt, uint64_t n_bits, uint32_t site) {
    (void)rt;
    return obj_new_at((i64)n_bits, site);
}

static void quarantine_values(const obj_meta *m, u32 site);

/* `@obj_dictify(obj)`; `site` (or NO_SITE) is the free site of the values
 * array it releases, which goes to quarantine (Heap::obj_dictify_at). */
static void dictify_at(u64 obj, u32 site) {
    obj_meta *m = meta(GL_FN_OBJ_DICTIFY, obj);
    if (!m) return;
    u64 word = read_word(slot(obj));
    switch (classify(m, word)) {
    case W_BAD:
        fault(GL_FN_OBJ_DICTIFY, GL_FAULT_CORRUPTED, obj, word, obj);
        return;
    case W_DICT:
        return;
    case W_EMPTY: {
        u64 d = new_dict();
        if (d) set_dict(m, obj, d);
        return;
    }
    case W_VALUES: {
        u64 d = new_dict();
        if (!d) return;
        dict_t *t = dict_of(d);
        for (u32 i = 0; i < m->n_attrs; i++)
            dict_set(t, i, (i64)read_word(m->values + (u64)GL_ATTR_BYTES * i));
        forget_values(m);
        quarantine_values(m, site);
        m->values = 0;
        set_dict(m, obj, d);
        return;
    }
    }
}

void gl_obj_dictify(void *rt, uint64_t obj) {
    (void)rt;
    dictify_at(obj, NO_SITE);
}

void gl_obj_dictify_at(void *rt, uint64_t obj, uint32_t site) {
    (void)rt;
    dictify_at(obj, site);
}

/* ---- quarantine: freed objects' memory is held, never reused or written ----- */

/* Maps (m) or unmaps (NULL) each 8-byte granule of [start, start + bytes). */
static void mark_granules(u64 start, u64 bytes, obj_meta *m) {
    for (u64 g = start >> 3; g < (start + bytes + 7) >> 3; g++) {
        if (m)
            map_put(&g_freed_mem, g, (u64)(uintptr_t)m);
        else
            map_del(&g_freed_mem, g);
    }
}

static u64 obj_block_bytes(void) { return block_bytes((u64)(obj_hi() - obj_lo())); }

/* The memory a freed object holds: its block, values block and dict block. */
static void mark_object_memory(obj_meta *m, obj_meta *as) {
    if (!m->values_only) mark_granules(m->base, obj_block_bytes(), as);
    if (m->values) mark_granules(values_block(m->values), values_block_bytes(m->n_attrs), as);
    if (m->dict) mark_granules(m->dict, block_bytes(GL_DICT_OBJECT_BYTES), as);
}

static u64 held_bytes(const obj_meta *m) {
    if (m->values_only) return values_block_bytes(m->n_attrs);
    return obj_block_bytes() + (m->values ? values_block_bytes(m->n_attrs) : 0) +
           (m->dict ? block_bytes(GL_DICT_OBJECT_BYTES) : 0);
}

/* Really releases the oldest quarantined objects while too much is held. */
static void evict(void) {
    while (g_qhead && g_qbytes > g_qlimit) {
        obj_meta *m = g_qhead;
        g_qhead = m->qnext;
        if (!g_qhead) g_qtail = NULL;
        g_qbytes -= held_bytes(m);
        mark_object_memory(m, NULL);
        if (m->values_only) {
            free_block(values_block(m->values), values_block_bytes(m->n_attrs));
            free(m);
            continue;
        }
        map_del(&g_freed, m->obj);
        /* The slot's last write outlives the free while the address is not reused. */
        if (!map_get(&g_objects, m->obj)) forget_write(slot(m->obj));
        if (m->values) free_block(values_block(m->values), values_block_bytes(m->n_attrs));
        if (m->dict) free_block(m->dict, GL_DICT_OBJECT_BYTES);
        free_block(m->base, (u64)(obj_hi() - obj_lo()));
        free(m);
    }
}

/* Appends `m` (freed) to the quarantine, marks its memory and evicts. */
static void enqueue(obj_meta *m) {
    m->qnext = NULL;
    if (g_qtail)
        g_qtail->qnext = m;
    else
        g_qhead = m;
    g_qtail = m;
    g_qbytes += held_bytes(m);
    mark_object_memory(m, m);
}

/* The values array of live object `m`, released by obj_dictify at `site`:
 * held in quarantine under a record of its own (the object's id and
 * allocation site, `site` as the free site), as Heap::release_values. */
static void quarantine_values(const obj_meta *m, u32 site) {
    obj_meta *r = calloc(1, sizeof *r);
    if (!r) oom();
    r->obj = m->obj;
    r->n_attrs = m->n_attrs;
    r->values = m->values;
    r->id = m->id;
    r->alloc_site = m->alloc_site;
    r->free_site = site;
    r->freed = 1;
    r->values_only = 1;
    enqueue(r);
    evict();
}

/* Frees live object `m`: its memory (object, values and dict blocks) goes
 * to quarantine, untouched; the dict's contents go. */
static void release(obj_meta *m, u32 site) {
    u64 obj = m->obj;
    map_del(&g_objects, obj);
    map_del(&g_watched, slot(obj));
    forget_values(m);
    if (m->dict) {
        dict_t *t = dict_of(m->dict);
        if (t) {
            free(t->idx);
            free(t->val);
            free(t);
            map_del(&g_dicts, m->dict);
        }
    }
    m->free_site = site;
    m->freed = 1;
    map_put(&g_freed, obj, (u64)(uintptr_t)m);
    enqueue(m);
    evict();
}

static obj_meta *freed_meta(u64 obj) {
    u64 *p = map_get(&g_freed, obj);
    return p ? (obj_meta *)(uintptr_t)*p : NULL;
}

/* What the runtime knows of `obj`: a live object, or one in quarantine. */
static obj_meta *known_meta(u64 obj) {
    obj_meta *m = live_meta(obj);
    return m ? m : freed_meta(obj);
}

void gl_obj_free(void *rt, uint64_t obj) {
    (void)rt;
    u64 *p = map_get(&g_objects, obj);
    if (!p) {
        fault(GL_FN_OBJ_FREE, freed_meta(obj) ? GL_FAULT_DOUBLE_FREE : GL_FAULT_NOT_LIVE, obj, 0, obj);
        return;
    }
    release((obj_meta *)(uintptr_t)*p, NO_SITE);
}

void gl_fault_clear_lsb(void *rt, uint64_t obj) {
    (void)rt;
    if (!meta(GL_FN_FAULT_CLEAR_LSB, obj)) return;
    write_word(slot(obj), read_word(slot(obj)) & ~(u64)1);
}

uint64_t gl_load_attr_slow(void *rt, uint64_t obj, uint64_t index) {
    (void)rt;
    u32 i = (u32)index;
    obj_meta *m = meta(GL_FN_LOAD_ATTR_SLOW, obj);
    if (!m) return 0;
    u64 word = read_word(slot(obj));
    switch (classify(m, word)) {
    case W_BAD:
        fault(GL_FN_LOAD_ATTR_SLOW, GL_FAULT_CORRUPTED, obj, word, obj);
        return 0;
    case W_EMPTY:
        return 0;
    case W_DICT: {
        i64 *p = dict_find(dict_of(word), i);
        return p ? (u64)*p : 0;
    }
    case W_VALUES:
        if (i < m->n_attrs) return read_word(m->values + (u64)GL_ATTR_BYTES * i);
        fault(GL_FN_LOAD_ATTR_SLOW, GL_FAULT_ATTR_RANGE, i, m->n_attrs, obj);
        return 0;
    }
    return 0;
}

void gl_store_attr_slow(void *rt, uint64_t obj, uint64_t index, uint64_t x) {
    (void)rt;
    u32 i = (u32)index;
    obj_meta *m = meta(GL_FN_STORE_ATTR_SLOW, obj);
    if (!m) return;
    u64 word = read_word(slot(obj));
    switch (classify(m, word)) {
    case W_BAD:
        fault(GL_FN_STORE_ATTR_SLOW, GL_FAULT_CORRUPTED, obj, word, obj);
        return;
    case W_EMPTY: {
        u64 d = new_dict();
        if (!d) return;
        dict_set(dict_of(d), i, (i64)x);
        set_dict(m, obj, d);
        return;
    }
    case W_DICT:
        dict_set(dict_of(word), i, (i64)x);
        return;
    case W_VALUES:
        if (i < m->n_attrs) {
            write_word(m->values + (u64)GL_ATTR_BYTES * i, x);
            return;
        }
        fault(GL_FN_STORE_ATTR_SLOW, GL_FAULT_ATTR_RANGE, i, m->n_attrs, obj);
        return;
    }
}

void gl_print_i64(void *rt, uint64_t v) {
    (void)rt;
    gl_out_char(GL_EV_PRINT);
    gl_out_bytes(" i", 2);
    gl_out_field(v);
    gl_out_nl();
}

void gl_print_f64(void *rt, double v) {
    (void)rt;
    u64 bits;
    memcpy(&bits, &v, 8);
    gl_out_char(GL_EV_PRINT);
    gl_out_bytes(" f", 2);
    gl_out_field(bits);
    gl_out_nl();
}

double gl_sin(double x) { return sin(x); }
double gl_cos(double x) { return cos(x); }
double gl_exp(double x) { return exp(x); }
double gl_log(double x) { return log(x); }
double gl_pow(double x, double y) { return pow(x, y); }
double gl_fmod(double x, double y) { return fmod(x, y); }

/* ---- reports (runtime/src/report.rs: deduplicated per site and kind) ------- */

typedef struct {
    u32 kind, site;
    u64 a, b, c; /* the observation of the first occurrence */
    last_write_t lw;
    u64 count;
    /* The object the report is about (id 0: none), as known at check time. */
    u64 object_id;
    u32 freed;
    u32 alloc_site, free_site;
    /* The IR call chain of the first occurrence (capture_frames). */
    unsigned nframes;
    u64 frames[GL_MAX_FRAMES];
    /* The objects the occurrences were about, first seen first, with
     * counts (spec §6 `objects`; runtime/src/report.rs count_object). */
    unsigned nobjects;
    u64 object_ids[GL_MAX_OBJECTS], object_counts[GL_MAX_OBJECTS];
} report_t;

/* Adds an occurrence about object `id` (0: none) to `r`'s list. */
static void count_object(report_t *r, u64 id) {
    if (!id) return;
    for (unsigned k = 0; k < r->nobjects; k++) {
        if (r->object_ids[k] == id) {
            r->object_counts[k]++;
            return;
        }
    }
    if (r->nobjects < GL_MAX_OBJECTS) {
        r->object_ids[r->nobjects] = id;
        r->object_counts[r->nobjects] = 1;
        r->nobjects++;
    }
}


static report_t *g_reports;
static size_t g_nreports, g_capreports;
static map_t g_report_index; /* site << 8 | kind -> index */

/* A site field of the protocol: hex, or `-` for none. */
static void put_site(u32 site) {
    if (site == NO_SITE)
        gl_out_bytes(" -", 2);
    else
        gl_out_field(site);
}

void gl_emit_reports(void) {
    for (size_t i = 0; i < g_nreports; i++) {
        report_t *r = &g_reports[i];
        u64 f[12] = {r->kind,     r->site,         r->a,         r->b,     r->c,
                     r->lw.code,  r->lw.site,      r->lw.value,  r->lw.object_id,
                     r->count,    r->object_id,    r->freed};
        gl_out_char(GL_EV_REPORT);
        for (int k = 0; k < 12; k++) gl_out_field(f[k]);
        put_site(r->alloc_site);
        put_site(r->free_site);
        gl_out_field(r->nframes);
        for (unsigned k = 0; k < r->nframes; k++) gl_out_code_pc(r->frames[k]);
        gl_out_field(r->nobjects);
        for (unsigned k = 0; k < r->nobjects; k++) {
            gl_out_field(r->object_ids[k]);
            gl_out_field(r->object_counts[k]);
        }
        gl_out_nl();
    }
    g_nreports = 0;
}

/* Records a violation about object `o` (may be NULL); returns 0 (recover)
 * or does not return. */
static uint32_t report(u32 kind, u32 site, u64 a, u64 b, u64 c, const last_write_t *lw,
                       const obj_meta *o) {
    u64 key = ((u64)site << 8) | kind;
    u64 *p = map_get(&g_report_index, key);
    if (p) {
        g_reports[*p].count++;
        count_object(&g_reports[*p], o ? o->id : 0);
    } else {
        if (g_nreports == g_capreports) {
            g_capreports = g_capreports ? g_capreports * 2 : 16;
            g_reports = realloc(g_reports, g_capreports * sizeof *g_reports);
            if (!g_reports) oom();
        }
        report_t *r = &g_reports[g_nreports];
        r->kind = kind;
        r->site = site;
        r->a = a;
        r->b = b;
        r->c = c;
        if (lw) {
            r->lw = *lw;
        } else {
            r->lw.code = GL_LW_NONE;
            r->lw.site = 0;
            r->lw.value = 0;
            r->lw.object_id = 0;
        }
        r->count = 1;
        r->object_id = o ? o->id : 0;
        r->freed = o ? o->freed : 0;
        r->alloc_site = o ? o->alloc_site : NO_SITE;
        r->free_site = o ? o->free_site : NO_SITE;
        r->nframes = gl_capture_frames(r->frames);
        r->nobjects = 0;
        count_object(r, r->object_id);
        map_put(&g_report_index, key, g_nreports);
        g_nreports++;
    }
    if (!g_recover) gl_die();
    return 0;
}

uint32_t gl_report_dict(void *rt, uint32_t site, uint64_t obj, uint64_t word) {
    (void)rt;
    u64 *p = map_get(&g_lastwrite, slot(obj));
    const last_write_t *lw = p ? (const last_write_t *)(uintptr_t)*p : NULL;
    return report(GL_KIND_DICT_SLOT_TAG, site, obj, word, 0, lw, known_meta(obj));
}

uint32_t gl_report_adstack(void *rt, uint32_t site, uint32_t kind, uint64_t capacity,
                           uint64_t len) {
    (void)rt;
    u32 k = kind == GL_KIND_ADSTACK_OVERFLOW ? GL_KIND_ADSTACK_OVERFLOW : GL_KIND_ADSTACK_UNDERFLOW;
    return report(k, site, capacity, len, 0, NULL, NULL);
}

/* The bounds check failed inline: attribute `index` of `obj` whose values
 * array holds `capacity` (both read by the check). */
uint32_t gl_report_bounds(void *rt, uint32_t site, uint64_t obj, uint64_t index,
                          uint64_t capacity) {
    (void)rt;
    return report(GL_KIND_ATTR_OUT_OF_BOUNDS, site, obj, index, capacity, NULL, known_meta(obj));
}

/* The lifetime check of an object access: 1 = go on; 0 = `obj` was freed
 * (reported; recover: the access is skipped). */
uint8_t gl_check_live(void *rt, uint64_t obj, uint32_t site) {
    (void)rt;
    obj_meta *m = freed_meta(obj);
    if (!m) return 1;
    report(GL_KIND_USE_AFTER_FREE, site, obj, obj, 0, NULL, m);
    return 0;
}

/* A clean loop's entry test (object files never version loops, so the JIT
 * alone calls it; defined as the runtime's Runtime::attr_fixed): 1 when
 * `obj` is a live object whose word is its own values array of more than
 * `max` attributes in the record (the capacity word is not read). */
uint8_t gl_attr_fixed(void *rt, uint64_t obj, uint32_t max) {
    (void)rt;
    obj_meta *m = live_meta(obj);
    if (!m || !m->values || m->n_attrs <= max) return 0;
    return read_word(slot(obj)) == GL_VALUES_WORD(m->values);
}

/* The bounds check of a raw access (Runtime::check_redzone): 1 = go on;
 * 0 = [addr, addr + width) touches a heap block's redzone (reported as
 * heap_overflow with the access and, for a store, its value). */
uint8_t gl_check_redzone(void *rt, uint64_t addr, uint32_t width, uint32_t site, uint32_t store,
                         uint64_t value) {
    (void)rt;
    if (g_redzones.used == 0) return 1;
    u32 w = width ? width : 1;
    u64 last = addr + w - 1 < addr ? UINT64_MAX : addr + w - 1;
    for (u64 g = addr >> 3; g <= last >> 3; g++) {
        u64 *p = map_get(&g_redzones, g);
        if (!p) continue;
        const obj_meta *m = (const obj_meta *)(uintptr_t)*p;
        u64 how = (u64)w | ((u64)(store != 0) << 32);
        report(GL_KIND_HEAP_OVERFLOW, site, addr, how, store ? value : 0, NULL, m);
        return 0;
    }
    return 1;
}

/* A stack_alloc area of a frame with bounds checks (Runtime::stack_area):
 * its pads are redzones until gl_stack_release, as the interpreter's areas
 * (heap blocks) have. */
void gl_stack_area(void *rt, uint64_t addr, uint32_t size) {
    (void)rt;
    set_redzones(addr, size, 0);
}

/* The frame of the area returns (Runtime::stack_area_gone). */
void gl_stack_release(void *rt, uint64_t addr, uint32_t size) {
    (void)rt;
    u64 end = addr + payload_bytes(size);
    for (u64 g = 0; g < GL_REDZONE_BYTES / 8; g++) {
        map_del(&g_redzones, ((addr - GL_REDZONE_BYTES) >> 3) + g);
        map_del(&g_redzones, (end >> 3) + g);
    }
}

/* The bounds check (Runtime::check_bounds): attribute `index` of `obj`,
 * whose word points to the values array at `values`, against the capacity
 * the runtime recorded for that array (0 for one it does not know), never
 * the capacity word in memory. 1 = in bounds; 0 = reported (recover). */
uint8_t gl_check_bounds(void *rt, uint32_t site, uint64_t obj, uint64_t values, uint64_t index) {
    (void)rt;
    u64 *p = map_get(&g_values, values);
    u64 capacity = p ? ((const obj_meta *)(uintptr_t)*p)->n_attrs : 0;
    if (index < capacity) return 1;
    report(GL_KIND_ATTR_OUT_OF_BOUNDS, site, obj, index, capacity, NULL, known_meta(obj));
    return 0;
}

/* The freed object whose held memory [addr, addr + width) touches, if any. */
static obj_meta *freed_memory(u64 addr, u32 width) {
    if (g_freed_mem.used == 0 || width == 0) return NULL;
    u64 last = addr + width - 1 < addr ? UINT64_MAX : addr + width - 1;
    for (u64 g = addr >> 3; g <= last >> 3; g++) {
        u64 *p = map_get(&g_freed_mem, g);
        if (p) return (obj_meta *)(uintptr_t)*p;
    }
    return NULL;
}

/* The lifetime check of a raw load or store: 1 = go on; 0 = the bytes fall
 * in a freed object's memory (reported; recover: skipped, loads give 0). */
uint8_t gl_check_mem(void *rt, uint64_t addr, uint32_t width, uint32_t site) {
    (void)rt;
    obj_meta *m = freed_memory(addr, width);
    if (!m) return 1;
    report(GL_KIND_USE_AFTER_FREE, site, m->obj, addr, width, NULL, m);
    return 0;
}

/* `call @obj_free` under the lifetime check: a quarantined object is a
 * double free, anything else that is not a live object an invalid free
 * (reported; recover: the free is ignored). */
void gl_obj_free_at(void *rt, uint64_t obj, uint32_t site) {
    (void)rt;
    obj_meta *m = live_meta(obj);
    if (m) {
        release(m, site);
        return;
    }
    m = freed_meta(obj);
    if (m)
        report(GL_KIND_DOUBLE_FREE, site, obj, obj, 0, NULL, m);
    else
        report(GL_KIND_INVALID_FREE, site, obj, obj, 0, NULL, NULL);
}

/* Does [addr, addr + width) overlap a watched 8-byte slot? */
/* The object whose watched 8-byte slot [addr, addr + width) overlaps (the
 * lowest such slot's), or 0. */
static u64 watched_owner(u64 addr, u32 width) {
    u64 lo = addr >= GL_DICT_WORD_BYTES - 1 ? addr - (GL_DICT_WORD_BYTES - 1) : 0;
    u64 hi = addr + width < addr ? UINT64_MAX : addr + width;
    if (g_watched.used == 0) return 0;
    for (u64 s = lo; s < hi; s++) {
        u64 *p = map_get(&g_watched, s);
        if (p) return *p;
    }
    return 0;
}

static int overlaps_watched(u64 addr, u32 width) { return watched_owner(addr, width) != 0; }

/* Trap mode's clobber test: the object traps itself when this says 1. */
uint32_t gl_clobber_overlaps(void *rt, uint64_t addr, uint32_t width) {
    (void)rt;
    return (uint32_t)overlaps_watched(addr, width);
}

uint32_t gl_clobber_check(void *rt, uint32_t site, uint64_t addr, uint32_t width,
                          uint64_t value) {
    (void)rt;
    u64 owner = watched_owner(addr, width);
    if (!owner) return 0;
    report(GL_KIND_SLOT_CLOBBER, site, addr, width, value, NULL, known_meta(owner));
    return 1;
}

void gl_watch(void *rt, uint64_t obj) {
    (void)rt;
    /* A freed object is never watched again. */
    if (freed_meta(obj)) return;
    map_put(&g_watched, slot(obj), obj);
}

void gl_note_slot_write(void *rt, uint32_t site, uint64_t obj, uint64_t word) {
    (void)rt;
    note_write(slot(obj), GL_LW_SITE, site, word, obj);
}

/* ---- main --------------------------------------------------------------------- */

typedef struct {
    u64 *args;
    u64 ret;
} run_t;

static void *run_entry(void *p) {
    run_t *r = p;
    gl_run_thread_begin((u64)(uintptr_t)__builtin_frame_address(0));
    __gl_start(r->args, &r->ret);
    gl_run_thread_end();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODE QUARANTINE_BYTES_HEX [ARG_BITS_HEX...]\n", argv[0]);
        return 2;
    }
    g_recover = strcmp(argv[1], GL_MODE_RECOVER) == 0;
    if (!g_recover && strcmp(argv[1], GL_MODE_ABORT) != 0 && strcmp(argv[1], GL_MODE_TRAP) != 0) {
        fprintf(stderr, "unknown mode %s\n", argv[1]);
        return 2;
    }
    g_qlimit = strtoull(argv[2], NULL, 16);
    int n = argc - 3;
    u64 *args = calloc((size_t)(n > 0 ? n : 1), sizeof(u64));
    if (!args) oom();
    for (int i = 0; i < n; i++) args[i] = strtoull(argv[i + 3], NULL, 16);

    gl_install_handlers();

    run_t r = {args, 0};
    pthread_attr_t attr;
    pthread_t th;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, (size_t)GL_RUN_STACK_BYTES);
    if (pthread_create(&th, &attr, run_entry, &r) != 0) {
        /* No big stack to be had: run on this one. */
        run_entry(&r);
    } else {
        pthread_join(th, NULL);
    }
    gl_emit_reports();
    gl_out_char(GL_EV_RESULT);
    gl_out_field(r.ret);
    gl_out_nl();
    gl_out_line(GL_EV_END);
    gl_flush_out();
    return 0;
}
