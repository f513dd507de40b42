// A loaded model: the weight file (mmap), the model-family plugin that understands it, and its
// configuration. Builds planned forward graphs on request; never touches a device.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rlx/arena.h"
#include "rlx/plugin_host.h"
#include "rlx/weights.h"

namespace rlx {

struct ModelOptions {
  // Keep quantized / f16 / bf16 matrices packed as in the file (the kernels read the blocks).
  // Unset: packed for GGUF files of 256 MB or more; an explicit value always wins.
  std::optional<bool> packed;
};

// Where the bytes of one graph weight come from.
struct WeightSource {
  DType dtype;  // as the graph sees it
  Shape shape;
  DType file_dtype;     // as stored; differs when the loader converts to f32
  const uint8_t* data;  // file bytes (mmap) or a constant owned by the Model
  uint64_t file_nbytes;
};

class Model {
 public:
  static std::unique_ptr<Model> load(const PluginHost& host, const std::filesystem::path& weights,
                                     const ModelOptions& opts = {});
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const rlx_model_config& config() const { return config_; }
  const WeightFile& file() const { return *file_; }
  const std::string& family() const { return family_; }
  bool packed() const { return packed_; }

  // The forward graph for `seq` new tokens over KV caches of `capacity` rows, planned.
  PlannedGraph forward(int64_t seq, int64_t capacity, rlx_logits_mode logits) const;

  // The source of a graph weight (by the graph tensor's name); throws if unknown.
  const WeightSource& weight(const std::string& name) const;

 private:
  Model() = default;
  friend struct GraphBuilderBridge;

  std::unique_ptr<WeightFile> file_;
  ModelPlugin plugin_;
  std::string family_;
  rlx_model* handle_ = nullptr;
  rlx_model_config config_{};
  bool packed_ = false;
  mutable std::map<std::string, WeightSource, std::less<>> weights_;
  mutable std::map<std::string, std::vector<uint8_t>, std::less<>> constants_;
};

}  // namespace rlx
