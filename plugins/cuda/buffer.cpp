#include "buffer.h"

#include "error.h"

namespace rlx::gpu {

Buffer::Buffer(uint64_t bytes) : size_(bytes) {
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, bytes ? bytes : 256);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it so later calls don't see it
    fail(e == cudaErrorMemoryAllocation ? RLX_ERR_OUT_OF_MEMORY : RLX_ERR_INTERNAL,
         "cudaMalloc of ", bytes, " bytes failed: ", cudaGetErrorString(e));
  }
  ptr_ = static_cast<char*>(p);
}

Buffer::~Buffer() {
  if (ptr_) (void)cudaFree(ptr_);
}

void Buffer::check_range(const char* what, uint64_t offset, uint64_t bytes,
                         const void* host) const {
  uint64_t end;
  if (!host && bytes) fail(RLX_ERR_INVALID, what, ": null host pointer");
  if (__builtin_add_overflow(offset, bytes, &end) || end > size_)
    fail(RLX_ERR_INVALID, what, ": bytes [", offset, ", ", offset + bytes,
         ") outside the buffer's ", size_, " bytes");
}

}  // namespace rlx::gpu
