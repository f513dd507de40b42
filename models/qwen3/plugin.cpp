// qwen3: Qwen3 dense models (GGUF architecture "qwen3", HF model_type "qwen3").
#include "forward.h"

namespace {

constexpr const char* kGgufArchs[] = {"qwen3", nullptr};
constexpr const char* kHfTypes[] = {"qwen3", nullptr};

const rlx::model::Family kFamily = {
    "qwen3",
    "Qwen3 dense: GQA, per-head q/k RMSNorm, SwiGLU, rope on halves, explicit head dim",
    kGgufArchs,
    kHfTypes,
    {"qwen3", 1000000.0, 1e-6},
    /*qk_norm=*/true,
    rlx::model::qwen3_forward};

}  // namespace

RLX_DEFINE_MODEL_PLUGIN(kFamily)
