// llama32: Llama 3.x dense models (GGUF architecture "llama", HF model_type "llama").
#include "forward.h"

namespace {

constexpr const char* kGgufArchs[] = {"llama", nullptr};
constexpr const char* kHfTypes[] = {"llama", nullptr};

const rlx::model::Family kFamily = {
    "llama32",
    "Llama 3.x: GQA, SwiGLU, RMSNorm, Llama-3 rope scaling, tied or separate lm_head",
    kGgufArchs,
    kHfTypes,
    {"llama", 10000.0, 1e-5},
    /*qk_norm=*/false,
    rlx::model::llama32_forward};

}  // namespace

RLX_DEFINE_MODEL_PLUGIN(kFamily)
