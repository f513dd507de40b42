// SplitProgram on real tiny-model forward graphs: two cpu devices stand in for "a device" and
// "its fallback", and a placement sends chosen nodes to the second. Whatever the cut, the logits
// and the KV cache the caller sees must equal one Program running the whole graph.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <map>

#include "rlx/error.h"
#include "rlx/model.h"
#include "rlx/split_program.h"
#include "rlx/weight_store.h"
#include "tiny_model.h"

using namespace rlx;
namespace fs = std::filesystem;

namespace {

PluginHost& host() { return test::tree_plugins(); }

// The buffers one forward graph is bound to on one device: inputs, caches, output, weights.
struct Bound {
  std::map<std::string, Buffer> own;
  std::vector<rlx_binding> binds;
};

Bound bind_all(Device& dev, WeightStore& weights, const PlannedGraph& plan) {
  Bound b;
  const Graph& g = plan.graph;
  for (TensorId t : g.slots) {
    const Tensor& tensor = g.tensors[t];
    const Buffer* buf;
    if (tensor.kind == TensorKind::Weight) {
      buf = &weights.get(tensor.name);
    } else {
      auto [it, _] = b.own.emplace(tensor.name, dev.alloc(plan.tensors[t].nbytes));
      std::vector<uint8_t> zero(plan.tensors[t].nbytes, 0);
      it->second.write(0, zero.data(), zero.size());
      buf = &it->second;
    }
    b.binds.push_back(rlx_binding{buf->handle(), 0});
  }
  return b;
}

std::vector<float> read_f32(const Buffer& b) {
  std::vector<float> v(b.size() / 4);
  b.read(0, v.data(), b.size());
  return v;
}

// Runs prefill of `ids` then one decode step, each through `make(plan)`, and returns the
// logits of both runs followed by every cache.
template <class Run>
std::vector<float> two_steps(const Model& model, Device& dev, WeightStore& weights, Run run) {
  const int64_t rows = 8;
  std::vector<float> out;
  Bound state;
  for (int step = 0; step < 2; ++step) {
    const std::vector<int32_t> ids = step == 0 ? std::vector<int32_t>{4, 8, 15} : std::vector{16};
    const std::vector<int32_t> pos = step == 0 ? std::vector<int32_t>{0, 1, 2} : std::vector{3};
    PlannedGraph plan = model.forward(static_cast<int64_t>(ids.size()), rows, RLX_LOGITS_LAST);
    Bound b = bind_all(dev, weights, plan);
    if (step == 1)  // carry the caches over
      for (auto& [name, buf] : b.own)
        if (name.find("cache") != std::string::npos) {
          auto v = read_f32(state.own.at(name));
          buf.write(0, v.data(), v.size() * 4);
        }
    b.own.at("ids").write(0, ids.data(), ids.size() * 4);
    b.own.at("pos").write(0, pos.data(), pos.size() * 4);
    run(plan, b.binds);
    auto logits = read_f32(b.own.at("logits"));
    out.insert(out.end(), logits.begin(), logits.end());
    state = std::move(b);
  }
  for (auto& [name, buf] : state.own)
    if (name.find("cache") != std::string::npos) {
      auto v = read_f32(buf);
      out.insert(out.end(), v.begin(), v.end());
    }
  return out;
}

}  // namespace

TEST_CASE("a split graph computes what the whole graph computes", "[split]") {
  fs::path dir = fs::temp_directory_path() / "rlx-test-split";
  fs::create_directories(dir);
  for (const char* arch : {"llama", "qwen3"}) {
    INFO(arch);
    test::TinyModel tm;
    tm.arch = arch;
    tm.matrix_dtype = std::string(arch) == "llama" ? RLX_Q8_0 : RLX_F32;
    const fs::path path = dir / (std::string(arch) + ".gguf");
    test::write_tiny_model(tm, path);
    auto model = Model::load(host(), path);
    auto dev = host().open_device("cpu");
    auto other = host().open_device("cpu");  // a separate device: its own buffers
    WeightStore weights(dev, *model), other_weights(other, *model);
    auto lookup = [&](const std::string& n) -> const Buffer& { return other_weights.get(n); };

    const auto want = two_steps(*model, *dev, weights, [&](const PlannedGraph& plan, auto& binds) {
      dev->compile(plan).run(binds);
    });

    using Pick = std::function<bool(const PlannedGraph&, uint32_t)>;  // true = on the device
    auto op_is = [](std::vector<std::string> ops) {
      return Pick([ops](const PlannedGraph& p, uint32_t n) {
        for (const std::string& op : ops)
          if (op == p.nodes[n].op_name) return false;
        return true;
      });
    };
    const std::vector<std::pair<const char*, Pick>> cuts = {
        {"attention and kv_store", op_is({"attention", "kv_store"})},
        {"rope only", op_is({"rope"})},
        {"the norms", op_is({"rms_norm"})},
        {"every other node", [](const PlannedGraph&, uint32_t n) { return n % 2 == 0; }},
        {"everything", [](const PlannedGraph&, uint32_t) { return false; }},
    };
    for (const auto& [what, pick] : cuts) {
      INFO(what);
      size_t segments = 0;
      const auto got =
          two_steps(*model, *dev, weights, [&](const PlannedGraph& plan, auto& binds) {
            SplitProgram sp(plan, dev, other, lookup,
                            [&](uint32_t n) { return pick(plan, n); });
            CHECK(sp.fallback_nodes() > 0);
            segments = std::max(segments, sp.segments());
            sp.run(binds);
            sp.run(binds);  // running twice is harmless: the same inputs, the same outputs
          });
      CHECK(segments > (std::strcmp(what, "everything") == 0 ? 0u : 1u));
      REQUIRE(got.size() == want.size());
      CHECK(std::memcmp(got.data(), want.data(), got.size() * 4) == 0);
    }
  }
}

TEST_CASE("a node that runs nowhere is an error naming it", "[split]") {
  fs::path dir = fs::temp_directory_path() / "rlx-test-split";
  fs::create_directories(dir);
  test::write_tiny_model({}, dir / "llama.gguf");
  auto model = Model::load(host(), dir / "llama.gguf");
  auto dev = host().open_device("cpu");
  PlannedGraph plan = model->forward(1, 4, RLX_LOGITS_LAST);
  auto nowhere = [](uint32_t) { return false; };
  REQUIRE_THROWS_WITH(SplitProgram(plan, dev, nullptr, {}, nowhere),
                      Catch::Contains("no fallback device") && Catch::Contains("node 0"));
}
