// EMBED: table [v, d], ids i32 [s] -> out [s, d]. Ids come from the user (a prompt, a sampled
// token), so each is checked before anything is written: a bad id is an error, never a wild read
// and never a half-written output.
#include <algorithm>
#include <cstring>

#include "../error.h"
#include "../thread_pool.h"
#include "kernels.h"

namespace rlx::cpu {

void embed_f32(ThreadPool& pool, const float* table, int64_t v, int64_t d, const int32_t* ids,
               int64_t s, float* out) {
  for (int64_t i = 0; i < s; ++i)
    if (ids[i] < 0 || ids[i] >= v)
      fail(RLX_ERR_INVALID, "token id ", ids[i], " out of range [0, ", v, ")");
  const size_t row_bytes = static_cast<size_t>(d) * sizeof(float);
  pool.parallel_for(
      s,
      [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          std::memcpy(out + i * d, table + static_cast<int64_t>(ids[i]) * d, row_bytes);
      },
      std::max<int64_t>(1, 65536 / std::max<int64_t>(d, 1)));
}

}  // namespace rlx::cpu
