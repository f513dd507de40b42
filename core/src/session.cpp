#include "rlx/session.h"

namespace rlx {

Session Session::open(PluginHost& host, const std::filesystem::path& weights,
                      const SessionOptions& opts) {
  Session s;
  ModelOptions mo;
  mo.packed = opts.packed;
  s.model = Model::load(host, weights, mo);
  ProfileLookup lookup;
  lookup.explicit_path = opts.profile;
  lookup.weights = weights;
  lookup.family = s.model->family();
  lookup.configs_dir = opts.configs_dir;
  lookup.device = opts.device;
  s.profile = load_profile(lookup);
  for (const SessionOptions::Override& o : opts.overrides)
    set_from_flag(s.profile, o.key, o.value, o.flag);
  s.device = host.open_device_spec(opts.device, s.profile.threads.count);
  GeneratorOptions gopts = GeneratorOptions::from_profile(s.profile);
  gopts.host_device = host.host_device_for(*s.device, s.profile.threads.count);
  s.generator = std::make_unique<Generator>(s.device, *s.model, gopts);
  s.sampling = sample_opts(s.profile.sampling);
  return s;
}

}  // namespace rlx
