#pragma once

#include "plugin_entry.h"

namespace rlx::model {
void qwen3_forward(Builder& b, const Transformer& t, const ForwardShape& s);
}
