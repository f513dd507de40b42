// `rlx devices`: what the plugin host found — plugins, their devices, and every file it turned
// down with the reason. --json for scripts.
#include <algorithm>
#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.h"
#include "common.h"
#include "rlx/plugin_host.h"

namespace rlx::cli {
namespace {

const char* kind_name(rlx_plugin_kind k) { return k == RLX_PLUGIN_MODEL ? "model" : "backend"; }

const char* device_type_name(uint32_t t) {
  switch (t) {
    case RLX_DEVICE_CPU: return "cpu";
    case RLX_DEVICE_INTEGRATED_GPU: return "integrated-gpu";
    case RLX_DEVICE_DISCRETE_GPU: return "discrete-gpu";
    case RLX_DEVICE_VIRTUAL: return "virtual";
    default: return "other";
  }
}

void print_text(const PluginHost& host) {
  std::printf("rlx %s (plugin ABI %d.%d)\n\nplugin search path:\n", RLX_VERSION, RLX_ABI_MAJOR,
              RLX_ABI_MINOR);
  for (const auto& d : host.search_path()) std::printf("  %s\n", d.string().c_str());

  std::printf("\nplugins:\n");
  auto plugins = host.plugins();
  if (plugins.empty()) std::printf("  (none)\n");
  for (const auto& p : plugins)
    std::printf("  %-10s %-8s %-8s variant %-8s score %-3u %s\n", p.name.c_str(), kind_name(p.kind),
                p.version.c_str(), p.variant.empty() ? "-" : p.variant.c_str(), p.score,
                p.path.string().c_str());
  for (const auto& p : plugins)
    if (!p.architectures.empty())
      std::printf("  %-10s handles %s\n", p.name.c_str(),
                  fmt::format("{}", fmt::join(p.architectures, ", ")).c_str());

  std::printf("\ndevices:\n");
  auto devices = host.devices();
  if (devices.empty()) std::printf("  (none)\n");
  for (const auto& d : devices) {
    std::string mem = d.info.memory_total ? human_bytes(d.info.memory_total) : "?";
    if (d.info.memory_free) mem += " (" + human_bytes(d.info.memory_free) + " free)";
    std::printf("  %s:%u  %s  %s  driver %s  memory %s\n      capabilities: %s\n",
                d.backend.c_str(), d.index, device_type_name(d.info.type), d.info.name,
                d.info.driver[0] ? d.info.driver : "-", mem.c_str(), d.info.capabilities);
  }
  for (const auto& p : plugins)
    if (p.kind == RLX_PLUGIN_BACKEND &&
        !std::any_of(devices.begin(), devices.end(), [&](auto& d) { return d.backend == p.name; }))
      std::printf("  %s: no device on this machine\n", p.name.c_str());

  bool any_superseded = false, any_rejected = false;
  for (const auto& r : host.rejected()) (r.superseded ? any_superseded : any_rejected) = true;
  if (any_superseded) {
    std::printf("\nother variants (not chosen):\n");
    for (const auto& r : host.rejected())
      if (r.superseded)
        std::printf("  %s: %s\n", r.path.filename().string().c_str(), r.reason.c_str());
  }
  std::printf("\nrejected:\n");
  if (!any_rejected) std::printf("  (none)\n");
  for (const auto& r : host.rejected())
    if (!r.superseded) std::printf("  %s: %s\n", r.path.string().c_str(), r.reason.c_str());
}

std::string json_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items)
    out += fmt::format(R"({}"{}")", out.empty() ? "" : ",", json_escape(i));
  return out;
}

void print_json(const PluginHost& host) {
  std::string out = fmt::format(R"({{"version":"{}","abi":"{}.{}","search_path":[)", RLX_VERSION,
                                RLX_ABI_MAJOR, RLX_ABI_MINOR);
  const char* sep = "";
  for (const auto& d : host.search_path()) {
    out += fmt::format(R"({}"{}")", sep, json_escape(d.string()));
    sep = ",";
  }
  out += R"(],"plugins":[)";
  sep = "";
  for (const auto& p : host.plugins()) {
    out += fmt::format(
        R"({}{{"name":"{}","kind":"{}","version":"{}","variant":"{}","score":{},"abi":"{}.{}","file":"{}","description":"{}","architectures":[{}]}})",
        sep, json_escape(p.name), kind_name(p.kind), json_escape(p.version), json_escape(p.variant),
        p.score, p.abi_major, p.abi_minor, json_escape(p.path.string()), json_escape(p.description),
        json_list(p.architectures));
    sep = ",";
  }
  out += R"(],"devices":[)";
  sep = "";
  for (const auto& d : host.devices()) {
    out += fmt::format(
        R"({}{{"id":"{}:{}","backend":"{}","index":{},"type":"{}","name":"{}","driver":"{}","memory_total":{},"memory_free":{},"capabilities":"{}"}})",
        sep, json_escape(d.backend), d.index, json_escape(d.backend), d.index,
        device_type_name(d.info.type), json_escape(d.info.name), json_escape(d.info.driver),
        d.info.memory_total, d.info.memory_free, json_escape(d.info.capabilities));
    sep = ",";
  }
  out += R"(],"rejected":[)";
  sep = "";
  for (const auto& r : host.rejected()) {
    out += fmt::format(R"({}{{"file":"{}","name":"{}","reason":"{}","superseded":{}}})", sep,
                       json_escape(r.path.string()), json_escape(r.name), json_escape(r.reason),
                       r.superseded ? "true" : "false");
    sep = ",";
  }
  out += "]}\n";
  std::fputs(out.c_str(), stdout);
}

}  // namespace

int cmd_devices(int argc, char** argv) {
  cxxopts::Options opts("rlx devices", "List plugins, devices and rejected plugin files.");
  add_common_flags(opts);
  opts.add_options()("json", "print JSON instead of text");
  cxxopts::ParseResult r;
  if (!parse_flags(opts, argc, argv, r)) return 0;
  PluginHost host(apply_common_flags(r));
  if (r.count("json"))
    print_json(host);
  else
    print_text(host);
  return 0;
}

}  // namespace rlx::cli
