// The vulkan backend's errors: the shared plugin Error / cat / fail (plugins/common), plus
// vk_check for Vulkan results.
#pragma once

#include <vulkan/vulkan.h>

#include "../common/plugin_error.h"

namespace rlx::vk {

using plugin::cat;
using plugin::Error;
using plugin::fail;

const char* vk_result_name(VkResult r);

// Throws Error for a failed Vulkan call: out-of-memory results map to RLX_ERR_OUT_OF_MEMORY,
// a lost device and the rest to RLX_ERR_INTERNAL. `what` names the call.
inline void vk_check(VkResult r, const char* what) {
  if (r == VK_SUCCESS) return;
  rlx_status s = (r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY)
                     ? RLX_ERR_OUT_OF_MEMORY
                     : RLX_ERR_INTERNAL;
  fail(s, what, " failed: ", vk_result_name(r));
}

}  // namespace rlx::vk
