/* pyish bytecode interpreter, with a call-count threshold for the JIT. */
#include <stdio.h>
#include <stdlib.h>

#include "pyish.h"

void (*helpers[2])(Object *) = {interp_incref, interp_decref};

static size_t attr_index(const CodeObject *co, int32_t name) {
    /* The inline cache of a specializing interpreter: the name's index in the
     * class's split keys (pyish has one class per code object). */
    const TypeObject *tp = co->attr_type;
    for (size_t i = 0; i < tp->n_shared_keys; i++)
        if (tp->shared_keys[i] == co->names[name]) return i;
    fprintf(stderr, "pyish: %s has no attribute %s\n", tp->tp_name, co->names[name]);
    exit(2);
}

static int64_t interpret(CodeObject *co, const int64_t *args) {
    int64_t locals[16] = {0};
    int64_t stack[64];
    int sp = 0;
    for (int i = 0; i < co->nargs; i++) locals[i] = args[i];
    size_t pc = 0;
    for (;;) {
        const Instr in = co->code[pc++];
        switch (in.op) {
        case LOAD_CONST: stack[sp++] = co->consts[in.arg]; break;
        case LOAD_FAST: stack[sp++] = locals[in.arg]; break;
        case STORE_FAST: locals[in.arg] = stack[--sp]; break;
        case LOAD_ATTR: {
            Object *o = (Object *)(uintptr_t)stack[--sp];
            stack[sp++] = object_get_attr(o, attr_index(co, in.arg));
            break;
        }
        case STORE_ATTR: {
            Object *o = (Object *)(uintptr_t)stack[--sp];
            int64_t v = stack[--sp];
            object_set_attr(o, attr_index(co, in.arg), v);
            break;
        }
        case BINARY_ADD: sp--; stack[sp - 1] = (int64_t)((uint64_t)stack[sp - 1] + (uint64_t)stack[sp]); break;
        case BINARY_SUB: sp--; stack[sp - 1] = (int64_t)((uint64_t)stack[sp - 1] - (uint64_t)stack[sp]); break;
        case BINARY_MUL: sp--; stack[sp - 1] = (int64_t)((uint64_t)stack[sp - 1] * (uint64_t)stack[sp]); break;
        case COMPARE_LT: sp--; stack[sp - 1] = stack[sp - 1] < stack[sp]; break;
        case POP_JUMP_IF_FALSE:
            if (!stack[--sp]) pc = (size_t)in.arg;
            break;
        case JUMP: pc = (size_t)in.arg; break;
        case CALL_HELPER: helpers[in.arg]((Object *)(uintptr_t)stack[--sp]); break;
        case RETURN_VALUE: return stack[--sp];
        default: fprintf(stderr, "pyish: bad opcode %d\n", in.op); exit(2);
        }
    }
}

int64_t vm_call(VM *vm, CodeObject *co, const int64_t *args) {
    if (!co->compiled && vm->use_jit && !co->jit_failed && co->calls >= vm->hot_threshold) {
        if (jit_compile(vm, co) == 0) {
            printf("pyish: %s is hot after %u calls: compiled to guardlift IR (%s)\n", co->name,
                   co->calls, vm->instrument ? "instrumented: lifetime,dict,bounds,adstack,clobber" : "not instrumented");
        } else {
            co->jit_failed = 1;
        }
    }
    co->calls++;
    if (co->compiled) {
        int64_t r;
        if (gl_func_call_i64(co->compiled, args, (size_t)co->nargs, &r) != GL_OK) {
            fprintf(stderr, "pyish: calling compiled %s: %s\n", co->name, gl_last_error());
            exit(2);
        }
        return r;
    }
    return interpret(co, args);
}
