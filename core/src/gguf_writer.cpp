// GGUF v3 writer. The header, metadata and tensor infos are built in memory (small); tensor
// data is streamed from the caller's buffers. The output is written to a temp file in the
// target directory, fsync'ed and renamed over `path`, so readers never see half a file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "rlx/error.h"
#include "rlx/gguf.h"

namespace rlx {
namespace {

class Bytes {
 public:
  template <typename T>
  void put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    buf_.insert(buf_.end(), p, p + sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    buf_.insert(buf_.end(), s.begin(), s.end());
  }
  // A value's payload (no type tag); arrays carry their element type and count.
  void put_value(const MetaValue& v) {
    switch (v.type()) {
      case MetaType::U8: put<uint8_t>(static_cast<uint8_t>(*v.as_uint())); break;
      case MetaType::I8: put<int8_t>(static_cast<int8_t>(*v.as_int())); break;
      case MetaType::U16: put<uint16_t>(static_cast<uint16_t>(*v.as_uint())); break;
      case MetaType::I16: put<int16_t>(static_cast<int16_t>(*v.as_int())); break;
      case MetaType::U32: put<uint32_t>(static_cast<uint32_t>(*v.as_uint())); break;
      case MetaType::I32: put<int32_t>(static_cast<int32_t>(*v.as_int())); break;
      case MetaType::U64: put<uint64_t>(*v.as_uint()); break;
      case MetaType::I64: put<int64_t>(*v.as_int()); break;
      case MetaType::F32: put<float>(static_cast<float>(*v.as_float())); break;
      case MetaType::F64: put<double>(*v.as_float()); break;
      case MetaType::Bool: put<uint8_t>(*v.as_bool() ? 1 : 0); break;
      case MetaType::String: put_string(*v.as_string()); break;
      case MetaType::Array: {
        const auto& items = *v.as_array();
        put<uint32_t>(static_cast<uint32_t>(v.array_type()));
        put<uint64_t>(items.size());
        for (const MetaValue& item : items) put_value(item);
        break;
      }
    }
  }
  void pad_to(uint64_t align) {
    while (buf_.size() % align) buf_.push_back(0);
  }
  const std::vector<uint8_t>& data() const { return buf_; }

 private:
  std::vector<uint8_t> buf_;
};

// Writes everything or throws; `what` names the file for the message.
void write_all(int fd, const void* p, uint64_t n, const std::string& what) {
  const auto* c = static_cast<const uint8_t*>(p);
  while (n > 0) {
    ssize_t w = ::write(fd, c, std::min<uint64_t>(n, 1u << 30));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail("{}: write failed: {}", what, std::strerror(errno));
    c += w;
    n -= static_cast<uint64_t>(w);
  }
}

}  // namespace

void GgufWriter::set(std::string key, MetaValue v) {
  if (key.empty()) fail("GGUF writer: empty metadata key");
  for (auto& kv : kv_)
    if (kv.first == key) {
      kv.second = std::move(v);
      return;
    }
  kv_.emplace_back(std::move(key), std::move(v));
}

void GgufWriter::add_tensor(std::string name, DType dtype, Shape shape, const void* data,
                            uint64_t nbytes) {
  if (name.empty()) fail("GGUF writer: empty tensor name");
  for (const auto& t : tensors_)
    if (t.name == name) fail("GGUF writer: tensor '{}' added twice", name);
  if (!dtype_is_known(dtype)) fail("GGUF writer: tensor '{}': unknown dtype {}", name, +dtype);
  ggml_type_of(dtype);  // throws if GGUF has no id for it
  if (shape.empty() || shape.size() > 4)
    fail("GGUF writer: tensor '{}' has {} dimensions; GGUF takes 1 to 4", name, shape.size());
  int64_t elems = 1;
  for (int64_t d : shape) {
    if (d <= 0)
      fail("GGUF writer: tensor '{}' has shape {}; dims must be >= 1", name, shape_str(shape));
    if (__builtin_mul_overflow(elems, d, &elems))
      fail("GGUF writer: tensor '{}': element count of {} overflows", name, shape_str(shape));
  }
  if (shape.back() % dtype_block_elems(dtype) != 0)
    fail("GGUF writer: tensor '{}': rows of {} elements are not whole {} blocks of {}", name,
         shape.back(), dtype_name(dtype), dtype_block_elems(dtype));
  uint64_t want = dtype_bytes(dtype, elems);
  if (nbytes != want)
    fail("GGUF writer: tensor '{}' ({} {}) needs {} bytes, got {}", name, dtype_name(dtype),
         shape_str(shape), want, nbytes);
  if (!data && nbytes) fail("GGUF writer: tensor '{}' has no data", name);
  tensors_.push_back({std::move(name), dtype, std::move(shape), data, nbytes});
}

void GgufWriter::write(const std::filesystem::path& path, uint32_t alignment) const {
  const std::string file = path.string();
  if (alignment < 8 || (alignment & (alignment - 1)) != 0)
    fail("{}: GGUF alignment {} must be a power of two, at least 8", file, alignment);

  auto kvs = kv_;
  bool has_alignment = false;
  for (auto& [k, v] : kvs)
    if (k == "general.alignment") {
      has_alignment = true;
      if (v.as_uint() != std::optional<uint64_t>(alignment))
        fail("{}: metadata 'general.alignment' is {} but the file is written with alignment {}",
             file, v.describe(), alignment);
      v = MetaValue::u32(alignment);  // the spec's type, whatever integer type was given
    }
  if (!has_alignment && alignment != kGgufDefaultAlignment)
    kvs.emplace_back("general.alignment", MetaValue::u32(alignment));

  Bytes head;
  head.put<uint32_t>(kGgufMagic);
  head.put<uint32_t>(3);
  head.put<uint64_t>(tensors_.size());
  head.put<uint64_t>(kvs.size());
  for (const auto& [k, v] : kvs) {
    head.put_string(k);
    head.put<uint32_t>(static_cast<uint32_t>(v.type()));
    head.put_value(v);
  }
  uint64_t offset = 0;
  std::vector<uint64_t> offsets;
  for (const auto& t : tensors_) {
    head.put_string(t.name);
    head.put<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (size_t d = t.shape.size(); d-- > 0;) head.put<int64_t>(t.shape[d]);  // ne[0] fastest
    head.put<uint32_t>(ggml_type_of(t.dtype));
    head.put<uint64_t>(offset);
    offsets.push_back(offset);
    offset = (offset + t.nbytes + alignment - 1) / alignment * alignment;
  }
  if (!tensors_.empty()) head.pad_to(alignment);

  std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
  std::string tmpl = (dir / fmt::format(".{}.tmp-XXXXXX", path.filename().string())).string();
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0)
    fail("{}: cannot create a temp file in {}: {} (is the directory writable?)", file, dir.string(),
         std::strerror(errno));
  try {
    write_all(fd, head.data().data(), head.data().size(), file);
    static const uint8_t zeros[64] = {};
    uint64_t written = 0;
    for (size_t i = 0; i < tensors_.size(); ++i) {
      for (uint64_t pad = offsets[i] - written; pad > 0;) {
        uint64_t n = std::min<uint64_t>(pad, sizeof(zeros));
        write_all(fd, zeros, n, file);
        pad -= n;
      }
      write_all(fd, tensors_[i].data, tensors_[i].nbytes, file);
      written = offsets[i] + tensors_[i].nbytes;
    }
    if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0)
      fail("{}: cannot finish the temp file: {}", file, std::strerror(errno));
    if (::close(fd) != 0) {
      fd = -1;
      fail("{}: close failed: {}", file, std::strerror(errno));
    }
    fd = -1;
    if (::rename(tmpl.c_str(), path.c_str()) != 0)
      fail("{}: cannot rename the temp file into place: {}", file, std::strerror(errno));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmpl.c_str());
    throw;
  }
}

}  // namespace rlx
