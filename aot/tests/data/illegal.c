/* aot/tests/faults.rs: a host function that executes an illegal
 * instruction (not a guard's trap: not in the program's trap table). */
#include <stdint.h>
int64_t illegal(int64_t p) {
#if defined(__x86_64__)
    __asm__ volatile("ud2");
#elif defined(__aarch64__)
    __asm__ volatile(".inst 0x00000000");
#else
#error "the object targets are x86_64 and aarch64"
#endif
    return p;
}
