#pragma once

#include "plugin_entry.h"

namespace rlx::model {
void llama32_forward(Builder& b, const Transformer& t, const ForwardShape& s);
}
