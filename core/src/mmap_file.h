// A whole file mapped read-only. Tensors point straight into the mapping (zero copy), so a
// WeightFile keeps its MmapFiles alive as long as it lives.
#pragma once

#include <cstdint>
#include <filesystem>

namespace rlx {

class MmapFile {
 public:
  // Throws rlx::Error naming the file and the OS reason (missing, permission, a directory...).
  explicit MmapFile(const std::filesystem::path& path);
  ~MmapFile();
  MmapFile(const MmapFile&) = delete;
  MmapFile& operator=(const MmapFile&) = delete;

  const uint8_t* data() const { return data_; }  // nullptr for an empty file
  uint64_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace rlx
