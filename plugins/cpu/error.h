// The cpu backend's errors: the shared plugin Error / cat / fail (plugins/common).
#pragma once

#include "../common/plugin_error.h"

namespace rlx::cpu {

using plugin::cat;
using plugin::Error;
using plugin::fail;

}  // namespace rlx::cpu
