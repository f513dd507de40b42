#include "buffer.h"

#include <cstring>
#include <new>

#include "error.h"

namespace rlx::cpu {

Buffer::Buffer(uint64_t bytes, uint64_t alignment) : size_(bytes), alignment_(alignment) {
  if (alignment_ < kAlignment) alignment_ = kAlignment;
  if ((alignment_ & (alignment_ - 1)) != 0)
    fail(RLX_ERR_INVALID, "buffer alignment ", alignment, " is not a power of two");
  // Round up to whole lines so a vector loop may read a full last line; allocate at least one
  // line so a zero-byte buffer still has a unique, valid address.
  uint64_t padded = (bytes + alignment_ - 1) / alignment_ * alignment_;
  if (padded < bytes || static_cast<uint64_t>(static_cast<size_t>(padded)) != padded)
    fail(RLX_ERR_OUT_OF_MEMORY, "cannot allocate ", bytes, " bytes");
  if (padded == 0) padded = alignment_;
  data_ = static_cast<uint8_t*>(
      ::operator new (static_cast<size_t>(padded), std::align_val_t{alignment_}, std::nothrow));
  if (!data_) fail(RLX_ERR_OUT_OF_MEMORY, "cannot allocate ", bytes, " bytes of host memory");
}

Buffer::Buffer(WrapHost, const void* host, uint64_t bytes)
    : data_(static_cast<uint8_t*>(const_cast<void*>(host))), size_(bytes), owned_(false) {
  if (!host && bytes > 0) fail(RLX_ERR_INVALID, "wrapping ", bytes, " bytes at a null pointer");
}

Buffer::~Buffer() {
  if (owned_) ::operator delete (data_, std::align_val_t{alignment_});
}

void Buffer::check_range(const char* what, uint64_t offset, uint64_t bytes, const void* ptr) const {
  if (offset > size_ || bytes > size_ - offset)
    fail(RLX_ERR_INVALID, what, " of ", bytes, " bytes at offset ", offset,
         " is out of bounds of a ", size_, "-byte buffer");
  if (bytes > 0 && ptr == nullptr)
    fail(RLX_ERR_INVALID, what, " of ", bytes, " bytes with a null pointer");
}

void Buffer::write(uint64_t offset, const void* src, uint64_t bytes) {
  if (!owned_)
    fail(RLX_ERR_INVALID, "write to a buffer that wraps read-only host memory (buffer_from_host)");
  check_range("write", offset, bytes, src);
  if (bytes) std::memmove(data_ + offset, src, bytes);
}

void Buffer::read(uint64_t offset, void* dst, uint64_t bytes) const {
  check_range("read", offset, bytes, dst);
  if (bytes) std::memmove(dst, data_ + offset, bytes);
}

}  // namespace rlx::cpu
