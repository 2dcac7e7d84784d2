/*
 * gl_support.h: what the two files of the target-side support share
 * (gl_support.c: the model heap, reports and main; gl_signals.c: the
 * protocol output, the code table, backtraces and the signal handlers).
 * Not generated; the numbers come from the generated gl_layout.h.
 */
#ifndef GL_SUPPORT_H
#define GL_SUPPORT_H
#include <stddef.h>
#include <stdint.h>

#include "gl_layout.h"

typedef uint64_t u64;
typedef int64_t i64;
typedef uint32_t u32;

/* ---- gl_support.c --------------------------------------------------------- */

/* Appends one protocol line per recorded report (and forgets them). */
void gl_emit_reports(void);
/* Abort or trap mode after a violation: the reports, then `A`, then abort. */
void gl_die(void);

/* ---- gl_signals.c: the protocol on stdout, async-signal-safe ---------------- */

/* Writes what is buffered (write(2)). */
void gl_flush_out(void);
void gl_out_bytes(const char *p, size_t n);
void gl_out_char(char c);
/* ` HEX`: one numeric field (lowercase hex, no 0x). */
void gl_out_field(u64 v);
void gl_out_nl(void);
/* A line with no fields (`E`, `A`). */
void gl_out_line(char ev);
/* ` FN OFF` of a PC in IR code (its index in gl_code, its offset), else ` - -`. */
void gl_out_code_pc(u64 pc);

/* ---- gl_signals.c: backtraces, the run thread, the handlers ----------------- */

/* The IR call chain of the report being recorded, innermost first, as PCs
 * (at most GL_MAX_FRAMES); 0 outside IR code. */
unsigned gl_capture_frames(u64 *out);
/* A host fault of the model heap: when this thread is inside an IR call,
 * that call (return address - 1, the innermost on the stack) and the IR
 * frames outside it in `frames` (`*n` of them, innermost first); else 0. */
u64 gl_host_call_site(u64 *frames, unsigned *n);
/* Writes what is buffered and dies of SIGABRT (no core). */
void gl_die_of_abort(void);
/* The run thread is about to call the entry from the frame `entry_frame`
 * (an alternate signal stack, its stack bounds); and has returned. */
void gl_run_thread_begin(u64 entry_frame);
void gl_run_thread_end(void);
/* SIGSEGV, SIGBUS, SIGFPE (faults), SIGILL, SIGTRAP (traps). */
void gl_install_handlers(void);

#endif
