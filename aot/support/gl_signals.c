/*
 * gl_signals.c: the target-side support's protocol output, code table,
 * report backtraces and signal handlers (aot/src/protocol.rs, docs/TARGETS.md
 * "Faults on a target" and "Backtraces on the object paths").
 *
 * Everything the fault handler calls is async-signal-safe: the protocol is
 * written through a static buffer with write(2) (no stdio), the code table
 * (gl_code, generated per program in gl_traps.c) and the stack are only
 * read. The host maps every PC sent as (function index, offset) to its IR
 * site.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <ucontext.h>
#include <unistd.h>

#include "gl_support.h"

/* ---- output ------------------------------------------------------------- */

/* The protocol goes to stdout through this buffer and write(2) only (no
 * stdio): the fault handler flushes what the run wrote before it and adds
 * its own lines with the same functions, async-signal-safely. Bytes past
 * g_outlen are never read, so a line half-appended when a signal arrives is
 * simply not written. */
static char g_out[1 << 16];
static volatile size_t g_outlen;

static void write_all(const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(STDOUT_FILENO, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        p += w;
        n -= (size_t)w;
    }
}

void gl_flush_out(void) {
    write_all(g_out, g_outlen);
    g_outlen = 0;
}

void gl_out_bytes(const char *p, size_t n) {
    if (g_outlen + n > sizeof g_out) gl_flush_out();
    memcpy(g_out + g_outlen, p, n);
    g_outlen += n;
}

void gl_out_char(char c) { gl_out_bytes(&c, 1); }

/* ` HEX`: one numeric field (lowercase hex, no 0x). */
void gl_out_field(u64 v) {
    char b[17];
    int i = 17;
    do {
        b[--i] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    gl_out_char(' ');
    gl_out_bytes(b + i, (size_t)(17 - i));
}

void gl_out_nl(void) { gl_out_char('\n'); }

/* A line with no fields (`E`, `A`). */
void gl_out_line(char ev) {
    gl_out_char(ev);
    gl_out_nl();
}


/* ---- where a PC is: the IR functions' code (gl_code in gl_traps.c) ------------ */

/* The IR function containing `pc` (an index into gl_code) and the offset
 * in it, or -1. The host maps (index, offset) to the IR site. */
static long code_index(u64 pc, u64 *off) {
    for (unsigned long i = 0; i < gl_ncode; i++) {
        u64 start = (u64)(uintptr_t)gl_code[i].start;
        if (pc >= start && pc - start < gl_code[i].size) {
            *off = pc - start;
            return (long)i;
        }
    }
    return -1;
}

static int in_code(u64 pc) {
    u64 off;
    return code_index(pc, &off) >= 0;
}

/* ` FN OFF` of a PC in IR code, else ` - -`. */
void gl_out_code_pc(u64 pc) {
    u64 off = 0;
    long i = pc ? code_index(pc, &off) : -1;
    if (i < 0) {
        gl_out_bytes(" - -", 4);
        return;
    }
    gl_out_field((u64)i);
    gl_out_field(off);
}

/* The run thread's stack: where it called the entry (IR frames lie below)
 * and its low end (a fault just around it is a stack overflow). */
static volatile u64 g_entry_sp, g_stack_lo;

/* A word of the run thread's stack (a conservative scan reads any slot). */
static u64 stack_word(u64 a) { return *(volatile const u64 *)(uintptr_t)a; }

/* `[from, top)` capped at GL_SCAN_BYTES, 8-aligned start; 0 when empty. */
static u64 scan_end(u64 from, u64 top) {
    if (!top || from >= top) return 0;
    return top - from > GL_SCAN_BYTES ? from + GL_SCAN_BYTES : top;
}

/* The first frame record `[fp, return address]` in [from, top) whose
 * return address is in IR code, or 0. */
static u64 first_ir_record(u64 from, u64 top) {
    u64 end = scan_end(from, top);
    for (u64 a = (from + 7) & ~(u64)7; a + 16 <= end; a += 8) {
        u64 fp = stack_word(a), ra = stack_word(a + 8);
        if (fp > a && fp < top && ra > 1 && in_code(ra - 1)) return a;
    }
    return 0;
}

/* Appends to out[n..max) the calls (return address - 1) of the chain of
 * frame records from `rec` (Cranelift sets one up in every function that
 * calls) until a return address leaves IR code (the entry wrapper is not
 * in gl_code), the chain leaves [rec, top) or goes down; returns the new
 * count. Reads the stack only: the fault handler uses it. */
static unsigned walk_records(u64 rec, u64 top, u64 *out, unsigned n, unsigned max) {
    while (n < max && rec && !(rec & 7) && rec + 16 <= top) {
        u64 ra = stack_word(rec + 8);
        if (ra <= 1 || !in_code(ra - 1)) break;
        out[n++] = ra - 1;
        u64 next = stack_word(rec);
        if (next <= rec) break;
        rec = next;
    }
    return n;
}

/* The IR call chain of the report being recorded, innermost first, as PCs
 * (return address - 1) in IR code: the frame record the report stub pushed
 * is the first one up the stack whose return address is in IR code; then
 * the chain of frame records. The host checks that the first PC is the
 * report's site. */
unsigned gl_capture_frames(u64 *out) {
    u64 here = (u64)(uintptr_t)__builtin_frame_address(0), top = g_entry_sp;
    return walk_records(first_ir_record(here, top), top, out, 0, GL_MAX_FRAMES);
}

/* ---- signals ------------------------------------------------------------------ */

/* The handlers realign their stack on x86_64. The ABI enters a function
 * with rsp % 16 == 8 (a call pushed the return address), and gcc keeps
 * 16-byte locals there with aligned SSE stores (`movaps`). qemu-x86_64
 * 7.2 (Debian 12's) builds the signal frame 16-byte aligned, so
 * a handler starts with rsp % 16 == 0 and its first `movaps` to the stack
 * is a general-protection fault: SIGSEGV (SI_KERNEL) inside the handler
 * instead of its report (docs/TARGETS.md, "qemu-x86_64's misaligned signal
 * frames"). A real kernel aligns the frame; the realignment costs one `and`
 * there. */
#if defined(__x86_64__)
#define GL_SIGNAL_HANDLER __attribute__((force_align_arg_pointer))
#else
#define GL_SIGNAL_HANDLER
#endif

/* What a fault handler needs of the interrupted context: PC, stack pointer,
 * link register (the return address of a leaf; 0 on x86_64) and frame
 * pointer. */
typedef struct {
    u64 pc, sp, lr, fp;
} regs_t;

static regs_t signal_regs(void *uctx) {
    ucontext_t *uc = uctx;
    regs_t r = {0, 0, 0, 0};
#if defined(__aarch64__)
    r.pc = uc->uc_mcontext.pc;
    r.sp = uc->uc_mcontext.sp;
    r.lr = uc->uc_mcontext.regs[30];
    r.fp = uc->uc_mcontext.regs[29];
#elif defined(__x86_64__)
    r.pc = (u64)uc->uc_mcontext.gregs[REG_RIP];
    r.sp = (u64)uc->uc_mcontext.gregs[REG_RSP];
    r.fp = (u64)uc->uc_mcontext.gregs[REG_RBP];
#elif defined(__riscv)
    r.pc = (u64)uc->uc_mcontext.__gregs[REG_PC];
    r.sp = (u64)uc->uc_mcontext.__gregs[REG_SP];
    r.lr = (u64)uc->uc_mcontext.__gregs[REG_RA];
    r.fp = (u64)uc->uc_mcontext.__gregs[REG_S0];
#else
    (void)uc;
#endif
    return r;
}

static u64 scratch_load(int offset) {
    return __atomic_load_n((u64 *)(void *)(guardlift_runtime + GL_TRAP_SCRATCH_OFFSET + offset),
                           __ATOMIC_SEQ_CST);
}

/* Dies of `sig` (no core) once the handler returns and the faulting
 * instruction runs again. */
static void die_of(int sig) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* The innermost return address into IR code on the stack in [sp, top): the
 * IR call through which the thread entered host code (minus 1), or 0. */
static u64 call_on_stack(u64 sp, u64 top) {
    u64 end = scan_end(sp, top);
    for (u64 a = (sp + 7) & ~(u64)7; a + 8 <= end; a += 8) {
        u64 w = stack_word(a);
        if (w > 1 && in_code(w - 1)) return w - 1;
    }
    return 0;
}

/* The IR call chain outside a fault's site, innermost first, as calls
 * (return address - 1), as the host JIT's fault handler lists it. In IR
 * code: from the frame pointer's record (an aarch64 or riscv64 leaf without
 * a record of its own: the link register, in another function, is its
 * caller). In a host function (`site`: the IR call into it): the first
 * frame record up the stack returning into IR code is the host function's
 * (returning to `site`, skipped) or else the IR function's own. */
static unsigned fault_frames(const regs_t *r, int in_host, u64 site, u64 *out, int *leaf_lr) {
    u64 top = g_entry_sp, max = GL_MAX_FRAMES - 1;
    if (!top || r->sp >= top) return 0;
    if (in_host) {
        /* The scan reads from sp: only within the stack (an overflow's sp
         * may lie below it). */
        if (r->sp < g_stack_lo) return 0;
        u64 rec = first_ir_record(r->sp, top);
        if (rec && stack_word(rec + 8) - 1 == site) rec = stack_word(rec);
        return walk_records(rec, top, out, 0, (unsigned)max);
    }
    u64 rec = r->fp >= r->sp && r->fp < top ? r->fp : 0;
    unsigned n = 0;
    u64 off_pc, off_lr;
    long fn_pc = code_index(r->pc, &off_pc);
    long fn_lr = r->lr > 1 ? code_index(r->lr - 1, &off_lr) : -1;
    int leaf = fn_lr >= 0 && fn_lr != fn_pc && !(rec && stack_word(rec + 8) == r->lr);
    if (leaf) out[n++] = r->lr - 1;
    *leaf_lr = leaf;
    return walk_records(rec, top, out, n, (unsigned)max);
}

/* A fatal signal. In IR code, or in a host function IR code called (the
 * link register, else the innermost return address into IR code on the
 * stack, is the call): everything written so far, the reports recorded,
 * and a `C` line for the host's host_fault / stack_overflow report. Else
 * (the support itself, outside any IR call): `S`. Then die of the signal.
 * Async-signal-safe: write(2) of lines formatted here, from static memory. */
GL_SIGNAL_HANDLER static void on_crash(int sig, siginfo_t *si, void *uctx) {
    regs_t r = signal_regs(uctx);
    u64 addr = (u64)(uintptr_t)si->si_addr;
    int in_host = !in_code(r.pc);
    u64 site = r.pc;
    if (in_host) {
        site = 0;
        if (r.lr > 1 && in_code(r.lr - 1))
            site = r.lr - 1;
        else if (r.sp >= g_stack_lo && r.sp < g_entry_sp)
            site = call_on_stack(r.sp, g_entry_sp);
    }
    if (!site) {
        gl_out_char(GL_EV_SIGNAL);
        gl_out_field((u64)sig);
        gl_out_nl();
        gl_flush_out();
        die_of(sig);
        return;
    }
    u64 lo = g_stack_lo;
    int overflow = sig == SIGSEGV && lo && addr + GL_OVERFLOW_SLACK >= lo &&
                   addr < lo + GL_OVERFLOW_SLACK;
    gl_emit_reports();
    u64 frames[GL_MAX_FRAMES];
    int leaf_lr = 0;
    unsigned n = fault_frames(&r, in_host, site, frames, &leaf_lr);
    /* A fault in a prologue has no IR site: the call that entered it does. */
    u64 alt = !in_host && r.lr > 1 ? r.lr - 1 : 0;
#if defined(__x86_64__)
    /* No link register: the return address is on the stack. Every
     * function starts `push rbp; mov rbp, rsp` (4 bytes; Cranelift keeps
     * frame pointers), then probes the stack (where a deep recursion runs
     * out of it). The host uses ALT only where the PC has no IR site. */
    u64 off;
    if (!in_host && code_index(r.pc, &off) >= 0) {
        u64 ra = 0;
        if (off == 0)
            ra = stack_word(r.sp);
        else if (off < 4)
            ra = stack_word(r.sp + 8);
        else if (r.fp >= r.sp && r.fp + 16 <= g_entry_sp) {
            ra = stack_word(r.fp + 8);
        }
        if (ra > 1 && in_code(ra - 1)) {
            alt = ra - 1;
            /* The walk from the function's own record starts with ALT:
             * LEAF 1 (where the host takes ALT for the site it drops that
             * frame), and one frame more so the chain stays full. */
            if (off >= 4 && n && frames[0] == alt) {
                leaf_lr = 1;
                n = walk_records(r.fp, g_entry_sp, frames, 0, GL_MAX_FRAMES);
            }
        }
    }
#endif
    u64 f[5] = {(u64)sig, addr, r.pc, (u64)in_host, (u64)overflow};
    gl_out_char(GL_EV_CRASH);
    for (int k = 0; k < 5; k++) gl_out_field(f[k]);
    gl_out_code_pc(site);
    gl_out_code_pc(alt);
    gl_out_field((u64)leaf_lr);
    gl_out_field(n);
    for (unsigned k = 0; k < n; k++) gl_out_code_pc(frames[k]);
    gl_out_nl();
    gl_flush_out();
    die_of(sig);
}

u64 gl_host_call_site(u64 *frames, unsigned *n) {
    u64 here = (u64)(uintptr_t)__builtin_frame_address(0), top = g_entry_sp;
    *n = 0;
    if (!top || here >= top) return 0;
#if defined(__x86_64__) || defined(__aarch64__)
    /* The chain of frame records `[fp, return address]` (the support is
     * built with frame pointers, Cranelift's code keeps them): the first
     * record returning into IR code is the one of the function IR code
     * called (a stub or this support), the record it saved the IR
     * function's. A scan of the stack for return addresses could take a
     * stale one from a local array for one. */
    for (u64 rec = here; rec && !(rec & 7) && rec + 16 <= top;) {
        u64 ra = stack_word(rec + 8), next = stack_word(rec);
        if (ra > 1 && in_code(ra - 1)) {
            *n = walk_records(next, top, frames, 0, GL_MAX_FRAMES - 1);
            return ra - 1;
        }
        if (next <= rec) break;
        rec = next;
    }
    return 0;
#else
    /* riscv64's C frame records lie below the frame pointer: scan. */
    u64 site = call_on_stack(here, top);
    if (!site) return 0;
    u64 rec = first_ir_record(here, top);
    if (rec && stack_word(rec + 8) - 1 == site) rec = stack_word(rec);
    *n = walk_records(rec, top, frames, 0, GL_MAX_FRAMES - 1);
    return site;
#endif
}

void gl_die_of_abort(void) {
    gl_flush_out();
    die_of(SIGABRT);
}

/* A fatal division fault of spec 3.1 (`kind`: the ReportKind code of
 * div_by_zero or int_overflow), called from the cold path of the IR op: the
 * return address (minus 1) is that call, which carries the op's source
 * location; `fp` is the IR function's frame record (it calls, so it has
 * one). Everything recorded so far, then a `D` line for the host's report
 * (the host JIT's gl_arith_fault prints the same); then abort. */
void gl_arith_fault(void *rt, uint32_t kind, uint64_t fp) {
    (void)rt;
    u64 site = (u64)(uintptr_t)__builtin_return_address(0) - 1;
    u64 top = g_entry_sp;
    u64 frames[GL_MAX_FRAMES];
    unsigned n = 0;
    if (top && fp && fp < top)
        n = walk_records(fp, top, frames, 0, GL_MAX_FRAMES - 1);
    gl_emit_reports();
    gl_out_char(GL_EV_ARITH);
    gl_out_field((u64)kind);
    gl_out_code_pc(site);
    gl_out_field(n);
    for (unsigned k = 0; k < n; k++) gl_out_code_pc(frames[k]);
    gl_out_nl();
    gl_flush_out();
    die_of(SIGABRT);
}

/* A trap instruction. A guard's (trap mode; gl_traps.c says which site):
 * its observed values are in the scratch area at the runtime pointer if the
 * guard could claim it (runtime/src/trap.rs). The host prints the report.
 * Any other trap instruction is a fatal signal like a segfault. */
GL_SIGNAL_HANDLER static void on_trap(int sig, siginfo_t *si, void *uctx) {
    u64 pc = signal_regs(uctx).pc;
    const gl_trap_t *t = NULL;
    for (unsigned long i = 0; i < gl_ntraps; i++)
        if ((u64)(uintptr_t)gl_traps[i].pc == pc) t = &gl_traps[i];
    if (!t) {
        on_crash(sig, si, uctx);
        return;
    }
    u64 v[3] = {0, 0, 0};
    int have = 0;
    u64 token = GL_TRAP_TOKEN(t->site);
    if (scratch_load(GL_TRAP_OWNER_OFFSET) == token &&
        scratch_load(GL_TRAP_READY_OFFSET) == token) {
        for (int k = 0; k < 3; k++) v[k] = scratch_load(GL_TRAP_VALUES_OFFSET + 8 * k);
        have = 1;
    }
    u64 f[9] = {(u64)sig, pc, 1, t->kind, t->site, (u64)have, v[0], v[1], v[2]};
    gl_out_char(GL_EV_TRAP);
    for (int k = 0; k < 9; k++) gl_out_field(f[k]);
    gl_out_nl();
    gl_die();
}

static void install(int sig, void (*h)(int, siginfo_t *, void *)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = h;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}


void gl_install_handlers(void) {
    install(SIGILL, on_trap);
    install(SIGTRAP, on_trap);
    install(SIGSEGV, on_crash);
    install(SIGBUS, on_crash);
    install(SIGFPE, on_crash);
}

/* Where this thread's stack ends below (0 when unknown). */
static u64 stack_low_end(void) {
    pthread_attr_t a;
    void *addr = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &a) != 0) return 0;
    if (pthread_attr_getstack(&a, &addr, &size) != 0) addr = NULL;
    pthread_attr_destroy(&a);
    return (u64)(uintptr_t)addr;
}

void gl_run_thread_begin(u64 entry_frame) {
    /* Stack overflow lands on the guard page: handle it on its own stack. */
    static char altstack[1 << 16];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    g_stack_lo = stack_low_end();
    g_entry_sp = entry_frame;
}

void gl_run_thread_end(void) { g_entry_sp = 0; }
