// Shared by the libFuzzer targets: the input as a file for readers that take a path, a walk over
// an opened weight file, quiet logging. rlx::Error is the expected outcome of a bad input;
// anything else (a sanitizer report, a crash, another exception escaping) is a bug the fuzzer
// reports.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "rlx/log.h"
#include "rlx/weights.h"

namespace rlx::fuzz {

// One private directory per process (mkdtemp) holding one file, `name`, rewritten for every
// input; both removed at exit. A private directory, so nothing else sits next to the file
// (the safetensors reader also looks for config.json beside it).
class TempFile {
 public:
  explicit TempFile(const char* name) {
    const char* dir = std::getenv("TMPDIR");
    std::string tmpl = std::string(dir && *dir ? dir : "/tmp") + "/rlx-fuzz-XXXXXX";
    if (!mkdtemp(tmpl.data())) {
      std::perror("rlx fuzz: mkdtemp");
      std::abort();
    }
    dir_ = tmpl;
    path_ = dir_ / name;
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::filesystem::path& write(const uint8_t* data, size_t size) {
    FILE* f = std::fopen(path_.c_str(), "wb");
    if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
      std::perror("rlx fuzz: writing the temp file");
      std::abort();
    }
    return path_;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path dir_;
  std::filesystem::path path_;
};

// The input as a file, for readers that take a path: `name` in this process's private
// directory, rewritten for every input (one name per fuzz target).
inline const std::filesystem::path& input_file(const char* name, const uint8_t* data,
                                               size_t size) {
  static TempFile file(name);
  return file.write(data, size);
}

// Reads what a loader would from an opened weight file: every tensor's extent (its first and
// last byte) and every key's value; traps when a listed tensor cannot be found by name.
inline void touch(const rlx::WeightFile& f) {
  uint64_t sum = 0;
  for (const rlx::TensorEntry& t : f.tensors()) {
    sum += t.nbytes + static_cast<uint64_t>(t.elems());
    if (t.nbytes) sum += t.data[0] + t.data[t.nbytes - 1];
    if (f.find(t.name) == nullptr) __builtin_trap();
  }
  for (const auto& [k, v] : f.metadata()) sum += k.size() + static_cast<uint64_t>(v.type());
  volatile uint64_t sink = sum + f.mapped_bytes();
  (void)sink;
}

inline void quiet() { rlx::set_log_level("off"); }

}  // namespace rlx::fuzz
