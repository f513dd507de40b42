// Profile schema: one table of keys (type, bounds, allowed values, where it lives in Profile),
// and everything that reads values through it: TOML files, text (env, flags), --print-profile.
// Lookup order and env names are in profile_load.cpp.
#include "rlx/profile.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <span>
#include <sstream>
#include <type_traits>
#include <variant>

#include "rlx/error.h"

namespace rlx {
namespace {

constexpr std::array<std::string_view, 3> kPrefillCache = {"lru", "none", "dynamic"};
constexpr std::array<std::string_view, 3> kDecodeCache = {"buckets", "dynamic", "exact"};
constexpr std::array<std::string_view, 2> kLmHead = {"host", "graph"};
constexpr std::array<std::string_view, 3> kPrecision = {"f32", "f16", "bf16"};
constexpr std::array<std::string_view, 5> kSections = {"prefill", "decode", "memory", "sampling",
                                                       "threads"};

// A value as a source gave it: a TOML node's own type, or text parsed by the key's kind.
using Value = std::variant<int64_t, double, bool, std::string>;

enum class Kind { integer, number, boolean, choice };

struct Key {
  std::string_view section, name;
  Kind kind = Kind::integer;
  int64_t ilo = 0, ihi = 0;  // integer bounds, inclusive
  double flo = 0, fhi = 0;   // number bounds; fhi = inf when unbounded
  bool flo_open = false, fhi_open = false;
  bool single = false;  // a float field: values past FLT_MAX would become inf
  std::span<const std::string_view> choices;
  std::function<void(Profile&, const Value&)> set;  // the value is already checked
  std::function<std::string(const Profile&)> show;  // as a TOML value
  std::string full() const { return fmt::format("{}.{}", section, name); }
};

template <class S, class T>
Key integer_key(std::string_view sec, std::string_view name, S Profile::*s, T S::*f, int64_t lo) {
  Key k;
  k.section = sec;
  k.name = name;
  k.kind = Kind::integer;
  k.ilo = lo;
  k.ihi = std::numeric_limits<int64_t>::max();  // TOML's own limit
  if constexpr (sizeof(T) < sizeof(int64_t))
    k.ihi = static_cast<int64_t>(std::numeric_limits<T>::max());
  k.set = [s, f](Profile& p, const Value& v) { (p.*s).*f = static_cast<T>(std::get<int64_t>(v)); };
  k.show = [s, f](const Profile& p) { return fmt::format("{}", (p.*s).*f); };
  return k;
}

template <class S, class T>
Key number_key(std::string_view sec, std::string_view name, S Profile::*s, T S::*f, double lo,
               bool lo_open, double hi, bool hi_open) {
  Key k;
  k.section = sec;
  k.name = name;
  k.kind = Kind::number;
  k.flo = lo;
  k.flo_open = lo_open;
  k.fhi = hi;
  k.fhi_open = hi_open;
  k.single = std::is_same_v<T, float>;
  k.set = [s, f](Profile& p, const Value& v) { (p.*s).*f = static_cast<T>(std::get<double>(v)); };
  k.show = [s, f](const Profile& p) {
    std::string t = fmt::format("{}", (p.*s).*f);
    if (t.find_first_of(".en") == std::string::npos) t += ".0";  // stays a TOML float
    return t;
  };
  return k;
}

template <class S>
Key boolean_key(std::string_view sec, std::string_view name, S Profile::*s, bool S::*f) {
  Key k;
  k.section = sec;
  k.name = name;
  k.kind = Kind::boolean;
  k.set = [s, f](Profile& p, const Value& v) { (p.*s).*f = std::get<bool>(v); };
  k.show = [s, f](const Profile& p) { return std::string((p.*s).*f ? "true" : "false"); };
  return k;
}

// The enum's values are 0..n-1 in the order of `names`.
template <class S, class E>
Key choice_key(std::string_view sec, std::string_view name, S Profile::*s, E S::*f,
               std::span<const std::string_view> names) {
  Key k;
  k.section = sec;
  k.name = name;
  k.kind = Kind::choice;
  k.choices = names;
  k.set = [s, f, names](Profile& p, const Value& v) {
    auto it = std::find(names.begin(), names.end(), std::get<std::string>(v));
    (p.*s).*f = static_cast<E>(it - names.begin());
  };
  k.show = [s, f, names](const Profile& p) {
    return fmt::format("\"{}\"", names[static_cast<size_t>((p.*s).*f)]);
  };
  return k;
}

const std::vector<Key>& keys() {
  static const std::vector<Key> all = [] {
    using P = Profile;
    constexpr double inf = std::numeric_limits<double>::infinity();
    std::vector<Key> k;
    k.push_back(choice_key("prefill", "cache", &P::prefill, &PrefillProfile::cache, kPrefillCache));
    k.push_back(integer_key("prefill", "capacity", &P::prefill, &PrefillProfile::capacity, 1));
    k.push_back(integer_key("prefill", "seq_cap", &P::prefill, &PrefillProfile::seq_cap, 0));
    k.push_back(boolean_key("prefill", "fusion", &P::prefill, &PrefillProfile::fusion));
    k.push_back(
        choice_key("prefill", "precision", &P::prefill, &PrefillProfile::precision, kPrecision));

    k.push_back(choice_key("decode", "cache", &P::decode, &DecodeProfile::cache, kDecodeCache));
    k.push_back(integer_key("decode", "capacity", &P::decode, &DecodeProfile::capacity, 1));
    k.push_back(integer_key("decode", "max_past", &P::decode, &DecodeProfile::max_past, 0));
    k.push_back(choice_key("decode", "lm_head", &P::decode, &DecodeProfile::lm_head, kLmHead));
    k.push_back(boolean_key("decode", "resident_kv", &P::decode, &DecodeProfile::resident_kv));
    k.push_back(boolean_key("decode", "fusion", &P::decode, &DecodeProfile::fusion));
    k.push_back(
        choice_key("decode", "precision", &P::decode, &DecodeProfile::precision, kPrecision));

    k.push_back(integer_key("memory", "max_seq", &P::memory, &MemoryProfile::max_seq, 0));
    k.push_back(number_key("memory", "soft_fraction", &P::memory, &MemoryProfile::soft_fraction,
                           0.0, true, 1.0, false));
    k.push_back(integer_key("memory", "soft_budget_bytes", &P::memory,
                            &MemoryProfile::soft_budget_bytes, 0));
    k.push_back(integer_key("memory", "bucket_resident_bytes", &P::memory,
                            &MemoryProfile::bucket_resident_bytes, 0));
    k.push_back(boolean_key("memory", "keep_decode_graphs", &P::memory,
                            &MemoryProfile::keep_decode_graphs));

    k.push_back(number_key("sampling", "temperature", &P::sampling, &SamplingProfile::temperature,
                           0.0, false, inf, false));
    k.push_back(integer_key("sampling", "top_k", &P::sampling, &SamplingProfile::top_k, 0));
    k.push_back(number_key("sampling", "top_p", &P::sampling, &SamplingProfile::top_p, 0.0, false,
                           1.0, false));
    k.push_back(number_key("sampling", "min_p", &P::sampling, &SamplingProfile::min_p, 0.0, false,
                           1.0, false));
    k.push_back(number_key("sampling", "repeat_penalty", &P::sampling,
                           &SamplingProfile::repeat_penalty, 0.0, true, inf, false));
    k.push_back(
        integer_key("sampling", "repeat_last_n", &P::sampling, &SamplingProfile::repeat_last_n, 0));
    k.push_back(integer_key("sampling", "seed", &P::sampling, &SamplingProfile::seed, -1));

    k.push_back(integer_key("threads", "count", &P::threads, &ThreadsProfile::count, 0));
    return k;
  }();
  return all;
}

const Key* find_key(std::string_view section, std::string_view name) {
  for (const Key& k : keys())
    if (k.section == section && k.name == name) return &k;
  return nullptr;
}

const Key* find_key(std::string_view full) {
  size_t dot = full.find('.');
  if (dot == std::string_view::npos) return nullptr;
  return find_key(full.substr(0, dot), full.substr(dot + 1));
}

bool is_section(std::string_view s) {
  return std::find(kSections.begin(), kSections.end(), s) != kSections.end();
}

std::vector<std::string_view> names_in(std::string_view section) {
  std::vector<std::string_view> out;
  for (const Key& k : keys())
    if (k.section == section) out.push_back(k.name);
  return out;
}

// ---- did you mean ------------------------------------------------------------------------------

// Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps
// ("decdoe" -> "decode" is one edit). O(|a| |b|), names are short.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// The closest name, when it is close enough to be a typo: 1 edit for names up to 3 characters,
// 2 up to 6, 3 beyond.
std::string_view nearest(std::string_view word, std::span<const std::string_view> names) {
  std::string_view best;
  size_t best_d = std::numeric_limits<size_t>::max();
  for (std::string_view n : names) {
    size_t d = edit_distance(word, n);
    size_t limit = n.size() <= 3 ? 1 : n.size() <= 6 ? 2 : 3;
    if (d <= limit && d < best_d) {
      best = n;
      best_d = d;
    }
  }
  return best;
}

std::string quoted_list(std::span<const std::string_view> names) {
  std::string out;
  for (std::string_view n : names) out += fmt::format("{}\"{}\"", out.empty() ? "" : ", ", n);
  return out;
}

std::string plain_list(std::span<const std::string_view> names) {
  std::string out;
  for (std::string_view n : names) out += fmt::format("{}{}", out.empty() ? "" : ", ", n);
  return out;
}

// ---- checking ----------------------------------------------------------------------------------

std::string_view value_type(const Value& v) {
  switch (v.index()) {
    case 0: return "integer";
    case 1: return "float";
    case 2: return "boolean";
    default: return "string";
  }
}

// What a key accepts, as the end of "<key> must be ...".
std::string expected(const Key& k) {
  switch (k.kind) {
    case Kind::integer: return "an integer";
    case Kind::number: return "a number";
    case Kind::boolean: return "a boolean";
    case Kind::choice: return "one of " + quoted_list(k.choices);
  }
  return {};
}

std::string number_range(const Key& k) {
  if (std::isinf(k.fhi)) return fmt::format("{} {}", k.flo_open ? ">" : ">=", k.flo);
  return fmt::format("in {}{}, {}{}", k.flo_open ? "(" : "[", k.flo, k.fhi, k.fhi_open ? ")" : "]");
}

// Checks `v` against `k`, turning an integer given for a number key into a double. Returns the
// problem as "<key> must be ..., got ..." or an empty string.
std::string check(const Key& k, Value& v) {
  const std::string key = k.full();
  switch (k.kind) {
    case Kind::integer: {
      const int64_t* i = std::get_if<int64_t>(&v);
      if (!i) return fmt::format("{} must be an integer, got {}", key, value_type(v));
      if (*i < k.ilo) return fmt::format("{} must be >= {}, got {}", key, k.ilo, *i);
      if (*i > k.ihi) return fmt::format("{} must be <= {}, got {}", key, k.ihi, *i);
      return {};
    }
    case Kind::number: {
      if (const int64_t* i = std::get_if<int64_t>(&v)) v = static_cast<double>(*i);
      const double* d = std::get_if<double>(&v);
      if (!d) return fmt::format("{} must be a number, got {}", key, value_type(v));
      if (!std::isfinite(*d) ||
          (k.single && std::abs(*d) > static_cast<double>(std::numeric_limits<float>::max())))
        return fmt::format("{} must be a finite number, got {}", key, *d);
      bool low = k.flo_open ? *d <= k.flo : *d < k.flo;
      bool high = k.fhi_open ? *d >= k.fhi : *d > k.fhi;
      if (low || high) return fmt::format("{} must be {}, got {}", key, number_range(k), *d);
      return {};
    }
    case Kind::boolean:
      if (!std::holds_alternative<bool>(v))
        return fmt::format("{} must be a boolean (true or false), got {}", key, value_type(v));
      return {};
    case Kind::choice: {
      const std::string* s = std::get_if<std::string>(&v);
      if (!s) return fmt::format("{} must be {}, got {}", key, expected(k), value_type(v));
      if (std::find(k.choices.begin(), k.choices.end(), *s) != k.choices.end()) return {};
      std::string_view near = nearest(*s, k.choices);
      return fmt::format("{} must be {}, got \"{}\"{}", key, expected(k), *s,
                         near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near));
    }
  }
  return {};
}

void assign(Profile& p, const Key& k, const Value& v, std::string provenance) {
  k.set(p, v);
  p.provenance.insert_or_assign(k.full(), std::move(provenance));
}

std::optional<Value> parse_text(const Key& k, std::string_view t) {
  const char* end = t.data() + t.size();
  switch (k.kind) {
    case Kind::integer: {
      int64_t i = 0;
      auto r = std::from_chars(t.data(), end, i);
      if (t.empty() || r.ec != std::errc() || r.ptr != end) return std::nullopt;
      return Value(i);
    }
    case Kind::number: {
      double d = 0;
      auto r = std::from_chars(t.data(), end, d);
      if (t.empty() || r.ec != std::errc() || r.ptr != end) return std::nullopt;
      return Value(d);
    }
    case Kind::boolean: {
      std::string l(t);
      std::transform(l.begin(), l.end(), l.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      if (l == "1" || l == "true" || l == "yes" || l == "on") return Value(true);
      if (l == "0" || l == "false" || l == "no" || l == "off") return Value(false);
      return std::nullopt;
    }
    case Kind::choice: return Value(std::string(t));
  }
  return std::nullopt;
}

std::string unknown_key_hint(std::string_view full) {
  std::vector<std::string> all = profile_keys();
  std::vector<std::string_view> views(all.begin(), all.end());
  std::string_view near = nearest(full, views);
  if (!near.empty()) return fmt::format(" (did you mean '{}'?)", near);
  return fmt::format(" (keys: {})", plain_list(views));
}

// ---- TOML files --------------------------------------------------------------------------------

std::string_view node_type(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    case toml::node_type::array: return "array";
    case toml::node_type::table: return "table";
    default: return "nothing";
  }
}

std::optional<Value> node_value(const toml::node& n) {
  if (auto* i = n.as_integer()) return Value(i->get());
  if (auto* d = n.as_floating_point()) return Value(d->get());
  if (auto* b = n.as_boolean()) return Value(b->get());
  if (auto* s = n.as_string()) return Value(s->get());
  return std::nullopt;
}

uint32_t line_of(const toml::key& k, const toml::node& n) {
  return k.source().begin.line ? k.source().begin.line : n.source().begin.line;
}

// One entry of the top level of a file, or of a [device.<name>] table (prefix "device.<name>.").
void apply_section(Profile& p, const toml::key& sk, const toml::node& sn, const std::string& prefix,
                   const std::string& file) {
  const std::string sec(sk.str());
  const uint32_t line = line_of(sk, sn);
  if (!is_section(sec)) {
    if (!sn.is_table()) {
      // A key outside its section, e.g. `temperature = 0.5` at the top: name the section(s).
      std::vector<std::string_view> names;
      for (const Key& k : keys()) names.push_back(k.name);
      std::string_view near = nearest(sec, names);
      std::string hint;
      for (const Key& k : keys())
        if (!near.empty() && k.name == near)
          hint += fmt::format("{}'{}{}'", hint.empty() ? "" : " or ", prefix, k.full());
      fail("{}:{}: unknown key '{}{}'{}", file, line, prefix, sec,
           hint.empty() ? fmt::format(" (sections: {})", plain_list(kSections))
                        : fmt::format(" (did you mean {}?)", hint));
    }
    std::vector<std::string_view> sections(kSections.begin(), kSections.end());
    if (prefix.empty()) sections.push_back("device");
    std::string_view near = nearest(sec, sections);
    fail("{}:{}: unknown section '{}{}'{}", file, line, prefix, sec,
         near.empty() ? fmt::format(" (sections: {})", plain_list(sections))
                      : fmt::format(" (did you mean '{}{}'?)", prefix, near));
  }
  const toml::table* t = sn.as_table();
  if (!t)
    fail("{}:{}: {}{} must be a table ([{}{}]), got {}", file, line, prefix, sec, prefix, sec,
         node_type(sn));
  for (auto&& [nk, nv] : *t) {
    const std::string name(nk.str());
    const uint32_t kl = line_of(nk, nv);
    const Key* k = find_key(sec, name);
    if (!k) {
      std::vector<std::string_view> names = names_in(sec);
      std::string_view near = nearest(name, names);
      fail("{}:{}: unknown key '{}{}.{}'{}", file, kl, prefix, sec, name,
           near.empty() ? fmt::format(" (keys of [{}]: {})", sec, plain_list(names))
                        : fmt::format(" (did you mean '{}{}.{}'?)", prefix, sec, near));
    }
    std::optional<Value> v = node_value(nv);
    if (!v) fail("{}:{}: {} must be {}, got {}", file, kl, k->full(), expected(*k), node_type(nv));
    std::string problem = check(*k, *v);
    if (!problem.empty()) fail("{}:{}: {}", file, kl, problem);
    assign(p, *k, *v, fmt::format("{}:{}", file, kl));
  }
}

std::string read_file(const std::filesystem::path& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    fail("{}: is a directory, not a profile (expected a .rlx.toml file)", file.string());
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("{}: cannot read the profile: {}", file.string(), std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail("{}: reading the profile failed", file.string());
  return ss.str();
}

}  // namespace

std::string_view to_string(PrefillCache v) { return kPrefillCache[static_cast<size_t>(v)]; }
std::string_view to_string(DecodeCache v) { return kDecodeCache[static_cast<size_t>(v)]; }
std::string_view to_string(LmHead v) { return kLmHead[static_cast<size_t>(v)]; }
std::string_view to_string(Precision v) { return kPrecision[static_cast<size_t>(v)]; }

const std::string& Profile::source(std::string_view key) const {
  static const std::string kDefault = "default";
  if (!find_key(key)) fail("unknown profile key '{}'{}", key, unknown_key_hint(key));
  auto it = provenance.find(key);
  return it == provenance.end() ? kDefault : it->second;
}

std::vector<std::string> profile_keys() {
  std::vector<std::string> out;
  for (const Key& k : keys()) out.push_back(k.full());
  return out;
}

void set_from_text(Profile& p, std::string_view key, std::string_view text, std::string_view label,
                   std::string provenance) {
  const Key* k = find_key(key);
  if (!k) fail("{}: unknown profile key '{}'{}", label, key, unknown_key_hint(key));
  std::optional<Value> v = parse_text(*k, text);
  if (!v) {
    fail("{}: {} must be {}{}", label, k->full(), expected(*k),
         k->kind == Kind::boolean ? " (1/0, true/false, yes/no, on/off)" : "");
  }
  std::string problem = check(*k, *v);
  if (!problem.empty()) fail("{}: {}", label, problem);
  assign(p, *k, *v, std::move(provenance));
}

void set_from_flag(Profile& p, std::string_view key, std::string_view value,
                   std::string_view flag_name) {
  std::string flag(flag_name);
  if (!flag.starts_with('-')) flag = "--" + flag;
  set_from_text(p, key, value, fmt::format("{} '{}'", flag, value), "flag " + flag);
}

void apply_profile_file(Profile& p, const std::filesystem::path& file, std::string_view device) {
  const std::string label = file.string();
  const std::string text = read_file(file);
  toml::table root;
  try {
    root = toml::parse(std::string_view(text), std::string_view(label));
  } catch (const toml::parse_error& e) {
    fail("{}:{}:{}: {}", label, e.source().begin.line, e.source().begin.column, e.description());
  }

  for (auto&& [k, n] : root)
    if (k.str() != "device") apply_section(p, k, n, "", label);

  if (const toml::node* d = root.get("device")) {
    const toml::table* devices = d->as_table();
    if (!devices)
      fail("{}:{}: device must be a table of backends ([device.cuda.decode]), got {}", label,
           d->source().begin.line, node_type(*d));
    // Every device's section is checked, so a typo under [device.vulkan] fails on cpu too.
    for (auto&& [name, node] : *devices) {
      const std::string prefix = fmt::format("device.{}.", name.str());
      const toml::table* t = node.as_table();
      if (!t)
        fail("{}:{}: device.{} must be a table ([device.{}.decode]), got {}", label,
             line_of(name, node), name.str(), name.str(), node_type(node));
      Profile scratch;
      for (auto&& [k, n] : *t) apply_section(scratch, k, n, prefix, label);
    }
    // The backend's section, then the one for a single device of it ("cuda:1").
    const std::string backend(device.substr(0, device.find(':')));
    std::vector<std::string> wanted = {backend};
    if (device != backend) wanted.emplace_back(device);
    for (const std::string& want : wanted) {
      if (const toml::table* t = devices->get_as<toml::table>(want))
        for (auto&& [k, n] : *t) apply_section(p, k, n, fmt::format("device.{}.", want), label);
    }
  }
  p.file = file;
  p.device = std::string(device);
}

std::string describe(const Profile& p) {
  std::string out;
  if (!p.file.empty()) {
    out += fmt::format("# profile: {}", p.file.string());
  } else {
    out += "# profile: none found";
    if (!p.searched.empty()) {
      std::string looked;
      for (const auto& s : p.searched)
        looked += fmt::format("{}{}", looked.empty() ? "" : ", ", s.string());
      out += fmt::format(" (looked for {})", looked);
    }
  }
  if (!p.device.empty()) out += fmt::format("; device {}", p.device);
  out += '\n';

  size_t width = 0;
  for (const Key& k : keys()) width = std::max(width, k.name.size() + 3 + k.show(p).size());
  std::string_view section;
  for (const Key& k : keys()) {
    if (k.section != section) {
      section = k.section;
      out += fmt::format("\n[{}]\n", section);
    }
    std::string line = fmt::format("{} = {}", k.name, k.show(p));
    out += fmt::format("{:<{}}  # {}\n", line, width, p.source(k.full()));
  }
  return out;
}

}  // namespace rlx
