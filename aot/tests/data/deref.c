/* aot/tests/faults.rs: a host function that dereferences its argument. */
#include <stdint.h>
int64_t deref(int64_t p) { return *(volatile int64_t *)(intptr_t)p; }
