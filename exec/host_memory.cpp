#include "exec/host_memory.h"

#include <malloc.h>

namespace starfish::exec {

void keep_freed_host_memory() {
  ::mallopt(M_MMAP_MAX, 0);                 // large blocks from the heap too, reusable once freed
  ::mallopt(M_TRIM_THRESHOLD, 0x7fffffff);  // never give the heap's top back to the kernel
}

}  // namespace starfish::exec
