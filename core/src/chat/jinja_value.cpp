// Jinja values: truth, Python's str() / repr(), json.dumps and equality.
#include <charconv>
#include <cmath>

#include "jinja.h"
#include "jinja_util.h"

namespace rlx::chat {

const Value* Value::find(std::string_view key) const {
  if ((t != T::Dict && t != T::NS) || !d) return nullptr;
  for (const auto& [k, v] : *d)
    if (k == key) return &v;
  return nullptr;
}

void Value::set(const std::string& key, Value v) {
  for (auto& [k, old] : *d) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  d->emplace_back(key, std::move(v));
}

Value Args::get(size_t i, std::string_view name, const Value& def) const {
  if (i < pos.size()) return pos[i];
  for (const auto& [k, v] : kw)
    if (k == name) return v;
  return def;
}

bool Args::has(size_t i, std::string_view name) const {
  if (i < pos.size()) return true;
  for (const auto& [k, v] : kw)
    if (k == name) return true;
  return false;
}

bool truthy(const Value& v) {
  switch (v.t) {
    case Value::T::Undef:
    case Value::T::None: return false;
    case Value::T::Bool: return v.b;
    case Value::T::Int: return v.i != 0;
    case Value::T::Float: return v.f != 0;
    case Value::T::Str: return !v.s.empty();
    case Value::T::List: return !v.l->empty();
    case Value::T::Dict: return !v.d->empty();
    default: return true;
  }
}

std::string py_float(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  size_t e = sci.find('e');
  int exp = std::stoi(sci.substr(e + 1));
  std::string digits;
  for (size_t j = 0; j < e; ++j)
    if (sci[j] != '.') digits += sci[j];
  std::string out;
  if (exp >= -5 + 1 && exp < 16) {  // Python repr: fixed notation for 1e-4 <= |x| < 1e16
    if (exp >= 0) {
      if (digits.size() <= static_cast<size_t>(exp) + 1) {
        out = digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0') + ".0";
      } else {
        out = digits.substr(0, static_cast<size_t>(exp) + 1) + "." + digits.substr(static_cast<size_t>(exp) + 1);
      }
    } else {
      out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  }
  return sign + out;
}

std::string repr(const Value& v) {
  if (v.t != Value::T::Str) return to_str(v);
  const std::string& s = v.s;
  char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c == static_cast<unsigned char>(q)) {
          out += '\\';
          out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7f) {
          char b[8];
          std::snprintf(b, sizeof b, "\\x%02x", c);
          out += b;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += q;
  return out;
}

std::string to_str(const Value& v) {
  switch (v.t) {
    case Value::T::Undef: return "";
    case Value::T::None: return "None";
    case Value::T::Bool: return v.b ? "True" : "False";
    case Value::T::Int: return std::to_string(v.i);
    case Value::T::Float: return py_float(v.f);
    case Value::T::Str: return v.s;
    case Value::T::List: {
      std::string out = v.b ? "(" : "[";
      for (size_t j = 0; j < v.l->size(); ++j) out += (j ? ", " : "") + repr((*v.l)[j]);
      if (v.b && v.l->size() == 1) out += ",";
      return out + (v.b ? ")" : "]");
    }
    case Value::T::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, x] : *v.d) {
        out += (first ? "" : ", ") + repr(Value::str(k)) + ": " + repr(x);
        first = false;
      }
      return out + "}";
    }
    case Value::T::NS: return "<Namespace>";
    case Value::T::Func: return "<function>";
  }
  return "";
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string to_json(const Value& v, const JsonStyle& st, int level) {
  auto newline = [&](int lv) {
    return st.indent < 0 ? std::string() : "\n" + std::string(static_cast<size_t>(st.indent * lv), ' ');
  };
  switch (v.t) {
    case Value::T::Undef:
    case Value::T::None: return "null";
    case Value::T::Bool: return v.b ? "true" : "false";
    case Value::T::Int: return std::to_string(v.i);
    case Value::T::Float:
      if (std::isnan(v.f)) return "NaN";
      if (std::isinf(v.f)) return v.f < 0 ? "-Infinity" : "Infinity";
      return py_float(v.f);
    case Value::T::Str: return json_string(v.s);
    case Value::T::List: {
      if (v.l->empty()) return "[]";
      std::string out = "[";
      for (size_t j = 0; j < v.l->size(); ++j) {
        if (j) out += st.item_sep;
        out += newline(level + 1) + to_json((*v.l)[j], st, level + 1);
      }
      return out + newline(level) + "]";
    }
    case Value::T::Dict:
    case Value::T::NS: {
      if (v.d->empty()) return "{}";
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& kv : *v.d) items.push_back(&kv);
      if (st.sort_keys)
        std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
      std::string out = "{";
      for (size_t j = 0; j < items.size(); ++j) {
        if (j) out += st.item_sep;
        out += newline(level + 1) + json_string(items[j]->first) + st.key_sep +
               to_json(items[j]->second, st, level + 1);
      }
      return out + newline(level) + "}";
    }
    case Value::T::Func: return "null";
  }
  return "null";
}

std::string to_json(const Value& v, int indent, int level) {
  JsonStyle st;
  st.indent = indent;
  st.item_sep = indent < 0 ? ", " : ",";
  return to_json(v, st, level);
}

bool equal(const Value& a, const Value& b) {
  if (a.is_num() && b.is_num()) {
    if (a.t == Value::T::Float || b.t == Value::T::Float) return num(a) == num(b);
    return as_int(a) == as_int(b);
  }
  if (a.t != b.t) return false;
  switch (a.t) {
    case Value::T::Undef:
    case Value::T::None: return true;
    case Value::T::Str: return a.s == b.s;
    case Value::T::List:
      if (a.l->size() != b.l->size()) return false;
      for (size_t j = 0; j < a.l->size(); ++j)
        if (!equal((*a.l)[j], (*b.l)[j])) return false;
      return true;
    case Value::T::Dict:
      if (a.d->size() != b.d->size()) return false;
      for (const auto& [k, x] : *a.d) {
        const Value* y = b.find(k);
        if (!y || !equal(x, *y)) return false;
      }
      return true;
    default: return a.d == b.d && a.fn == b.fn;
  }
}

// ---- UTF-8 -----------------------------------------------------------------------------------

std::vector<uint32_t> decode_utf8(std::string_view s, std::vector<size_t>* offsets) {
  std::vector<uint32_t> out;
  size_t j = 0;
  while (j < s.size()) {
    if (offsets) offsets->push_back(j);
    unsigned char c = static_cast<unsigned char>(s[j]);
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (j + static_cast<size_t>(n) > s.size()) n = 1;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1Fu) : n == 3 ? (c & 0x0Fu) : (c & 0x07u);
    for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[j + static_cast<size_t>(k)]) & 0x3Fu);
    out.push_back(cp);
    j += static_cast<size_t>(n);
  }
  if (offsets) offsets->push_back(s.size());
  return out;
}

bool py_isspace(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::vector<size_t> off;
  auto cps = decode_utf8(s, &off);
  std::vector<uint32_t> set;
  if (chars) set = decode_utf8(*chars, nullptr);
  auto strip_it = [&](uint32_t c) {
    if (!chars) return py_isspace(c);
    return std::find(set.begin(), set.end(), c) != set.end();
  };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip_it(cps[b])) ++b;
  if (right)
    while (e > b && strip_it(cps[e - 1])) --e;
  return std::string(s.substr(off[b], off[e] - off[b]));
}

}  // namespace rlx::chat
