// The Jinja builtins chat templates use: filters, tests, and the Python methods of str / dict /
// list, as members of the interpreter (jinja_interp.h).
#include <cmath>

#include "jinja_interp.h"
#include "jinja_util.h"

namespace rlx::chat {

namespace {

std::string ascii_upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
std::string ascii_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
std::string py_title(const std::string& s) {
  std::string out = s;
  bool prev_alpha = false;
  for (char& c : out) {
    auto u = static_cast<unsigned char>(c);
    bool alpha = std::isalpha(u) != 0;
    c = static_cast<char>(alpha ? (prev_alpha ? std::tolower(u) : std::toupper(u)) : u);
    prev_alpha = alpha || u >= 0x80;
  }
  return out;
}
std::string py_capitalize(const std::string& s) {
  std::string out = ascii_lower(s);
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}
std::string py_replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  if (from.empty()) {  // Python inserts `to` between every character
    std::vector<size_t> off;
    decode_utf8(s, &off);
    int64_t done = 0;
    for (size_t j = 0; j + 1 < off.size(); ++j) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      out.append(s, off[j], off[j + 1] - off[j]);
    }
    if (count < 0 || done < count) out += to;
    return out;
  }
  size_t p = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t q = s.find(from, p);
    if (q == std::string::npos) break;
    out.append(s, p, q - p);
    out += to;
    p = q + from.size();
    ++done;
  }
  out.append(s, p, std::string::npos);
  return out;
}
List py_split(const std::string& s, const Value& sep, int64_t maxsplit) {
  List out;
  if (!sep.is_str()) {  // runs of whitespace, no empty pieces
    std::vector<size_t> off;
    auto cps = decode_utf8(s, &off);
    size_t j = 0;
    while (j < cps.size()) {
      while (j < cps.size() && py_isspace(cps[j])) ++j;
      if (j >= cps.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
        out.push_back(Value::str(s.substr(off[j])));  // the rest, as is
        break;
      }
      size_t b = j;
      while (j < cps.size() && !py_isspace(cps[j])) ++j;
      out.push_back(Value::str(s.substr(off[b], off[j] - off[b])));
    }
    return out;
  }
  size_t p = 0;
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    size_t q = s.find(sep.s, p);
    if (q == std::string::npos) break;
    out.push_back(Value::str(s.substr(p, q - p)));
    p = q + sep.s.size();
  }
  out.push_back(Value::str(s.substr(p)));
  return out;
}

bool starts_or_ends(const std::string& s, const Value& what, bool start) {
  auto one = [&](const std::string& x) {
    if (x.size() > s.size()) return false;
    return start ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (what.is_list()) {
    for (const auto& x : *what.l)
      if (x.is_str() && one(x.s)) return true;
    return false;
  }
  return what.is_str() && one(what.s);
}

Value items_of(const Value& d) {
  List items;
  for (const auto& [k, v] : *d.d) {
    items.push_back(Value::list({Value::str(k), v}));
    items.back().b = true;  // (key, value) tuples
  }
  return Value::list(std::move(items));
}

}  // namespace

Value Interp::method(const Value& obj, const std::string& name) {
  const Value self = obj;
  auto fn = [](auto f) { return Value::func(std::move(f)); };
  if (obj.is_str()) {
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
      bool l = name != "rstrip", r = name != "lstrip";
      return fn([self, l, r](Interp& in, Args& a) {
        Value c = a.get(0, "chars", Value::none());
        if (c.is_none()) return Value::str(py_strip(self.s, nullptr, l, r));
        std::string chars = in.need_str(c, "strip()");
        return Value::str(py_strip(self.s, &chars, l, r));
      });
    }
    if (name == "startswith" || name == "endswith") {
      bool start = name == "startswith";
      return fn([self, start](Interp&, Args& a) {
        return Value::boolean(starts_or_ends(self.s, a.get(0, "prefix", Value()), start));
      });
    }
    if (name == "split") {
      return fn([self](Interp&, Args& a) {
        Value m = a.get(1, "maxsplit", Value::integer(-1));
        return Value::list(py_split(self.s, a.get(0, "sep", Value::none()), as_int(m)));
      });
    }
    if (name == "upper") return fn([self](Interp&, Args&) { return Value::str(ascii_upper(self.s)); });
    if (name == "lower") return fn([self](Interp&, Args&) { return Value::str(ascii_lower(self.s)); });
    if (name == "title") return fn([self](Interp&, Args&) { return Value::str(py_title(self.s)); });
    if (name == "capitalize") return fn([self](Interp&, Args&) { return Value::str(py_capitalize(self.s)); });
    if (name == "replace") {
      return fn([self](Interp& in, Args& a) {
        std::string from = in.need_str(a.get(0, "old", Value()), "replace()");
        std::string to = in.need_str(a.get(1, "new", Value()), "replace()");
        return Value::str(py_replace(self.s, from, to, as_int(a.get(2, "count", Value::integer(-1)))));
      });
    }
    if (name == "find") {
      return fn([self](Interp& in, Args& a) {
        size_t p = self.s.find(in.need_str(a.get(0, "sub", Value()), "find()"));
        if (p == std::string::npos) return Value::integer(-1);
        std::vector<size_t> off;
        decode_utf8(std::string_view(self.s).substr(0, p), &off);
        return Value::integer(static_cast<int64_t>(off.size()) - 1);
      });
    }
    if (name == "count") {
      return fn([self](Interp& in, Args& a) {
        std::string sub = in.need_str(a.get(0, "sub", Value()), "count()");
        if (sub.empty()) return Value::integer(static_cast<int64_t>(decode_utf8(self.s, nullptr).size()) + 1);
        int64_t c = 0;
        for (size_t p = self.s.find(sub); p != std::string::npos; p = self.s.find(sub, p + sub.size())) ++c;
        return Value::integer(c);
      });
    }
    if (name == "join") {
      return fn([self](Interp& in, Args& a) {
        std::string out;
        auto items = in.iterate(a.get(0, "iterable", Value()), in.pos);
        for (size_t j = 0; j < items.size(); ++j) out += (j ? self.s : "") + to_str(items[j]);
        return Value::str(std::move(out));
      });
    }
    if (name == "splitlines") {
      return fn([self](Interp&, Args&) {
        List out;
        size_t p = 0;
        while (p < self.s.size()) {
          size_t q = self.s.find_first_of("\r\n", p);
          if (q == std::string::npos) {
            out.push_back(Value::str(self.s.substr(p)));
            break;
          }
          out.push_back(Value::str(self.s.substr(p, q - p)));
          p = q + ((self.s[q] == '\r' && q + 1 < self.s.size() && self.s[q + 1] == '\n') ? 2 : 1);
        }
        return Value::list(std::move(out));
      });
    }
    if (name == "isspace" || name == "isdigit" || name == "isalpha") {
      return fn([self, name](Interp&, Args&) {
        auto cps = decode_utf8(self.s, nullptr);
        bool ok = !cps.empty();
        for (uint32_t c : cps) {
          if (name == "isspace") ok = ok && py_isspace(c);
          else if (name == "isdigit") ok = ok && c >= '0' && c <= '9';
          else ok = ok && c < 0x80 && std::isalpha(static_cast<int>(c));
        }
        return Value::boolean(ok);
      });
    }
  } else if (obj.is_dict()) {
    if (name == "get") {
      return fn([self](Interp&, Args& a) {
        Value k = a.get(0, "key", Value());
        const Value* v = self.find(k.is_str() ? k.s : to_str(k));
        return v ? *v : a.get(1, "default", Value::none());
      });
    }
    if (name == "items") return fn([self](Interp&, Args&) { return items_of(self); });
    if (name == "keys" || name == "values") {
      bool keys = name == "keys";
      return fn([self, keys](Interp&, Args&) {
        List out;
        for (const auto& [k, v] : *self.d) out.push_back(keys ? Value::str(k) : v);
        return Value::list(std::move(out));
      });
    }
  }
  return Value::undef(name);
}

// ---- filters ---------------------------------------------------------------------------------

Value Interp::filter(const std::string& name, const Value& v, Args& a) {
  auto length = [&](const Value& x) -> int64_t {
    switch (x.t) {
      case Value::T::Undef: return 0;
      case Value::T::Str: return static_cast<int64_t>(decode_utf8(x.s, nullptr).size());
      case Value::T::List: return static_cast<int64_t>(x.l->size());
      case Value::T::Dict:
      case Value::T::NS: return static_cast<int64_t>(x.d->size());
      default: fail(pos, fmt::format("object of type {} has no length", type_name(x)));
    }
  };
  if (name == "trim") {
    Value c = a.get(0, "chars", Value::none());
    std::string s = to_str(v);
    if (c.is_none()) return Value::str(py_strip(s, nullptr, true, true));
    std::string chars = need_str(c, "trim");
    return Value::str(py_strip(s, &chars, true, true));
  }
  if (name == "length" || name == "count") return Value::integer(length(v));
  if (name == "tojson") {
    JsonStyle st;
    Value ind = a.get(0, "indent", Value::none());
    if (!ind.is_none() && !ind.is_undef()) st.indent = static_cast<int>(as_int(ind));
    st.item_sep = st.indent < 0 ? ", " : ",";
    Value seps = a.get(100, "separators", Value::none());
    if (seps.is_list() && seps.l->size() == 2) {
      st.item_sep = to_str((*seps.l)[0]);
      st.key_sep = to_str((*seps.l)[1]);
    }
    st.sort_keys = truthy(a.get(100, "sort_keys", Value::boolean(false)));
    return Value::str(to_json(v, st, 0));
  }
  if (name == "string") return Value::str(to_str(v));
  if (name == "upper") return Value::str(ascii_upper(to_str(v)));
  if (name == "lower") return Value::str(ascii_lower(to_str(v)));
  if (name == "title") return Value::str(py_title(to_str(v)));
  if (name == "capitalize") return Value::str(py_capitalize(to_str(v)));
  if (name == "default" || name == "d") {
    bool boolean = truthy(a.get(1, "boolean", Value::boolean(false)));
    if (v.is_undef() || (boolean && !truthy(v))) return a.get(0, "default_value", Value::str(""));
    return v;
  }
  if (name == "first" || name == "last") {
    auto items = iterate(v, pos);
    if (items.empty()) return Value::undef();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "join") {
    std::string sep = to_str(a.get(0, "d", Value::str("")));
    Value attr = a.get(1, "attribute", Value::none());
    std::string out;
    auto items = iterate(v, pos);
    for (size_t j = 0; j < items.size(); ++j) {
      Value x = attr.is_none() ? items[j] : getattr(items[j], to_str(attr), pos);
      out += (j ? sep : "") + to_str(x);
    }
    return Value::str(std::move(out));
  }
  if (name == "replace") {
    std::string from = to_str(a.get(0, "old", Value())), to = to_str(a.get(1, "new", Value()));
    Value c = a.get(2, "count", Value::none());
    return Value::str(py_replace(to_str(v), from, to, c.is_none() ? -1 : as_int(c)));
  }
  if (name == "items") {
    if (v.is_undef()) return Value::list();
    if (v.t != Value::T::Dict && v.t != Value::T::NS) fail(pos, fmt::format("items needs a dict, got {}", type_name(v)));
    return items_of(v);
  }
  if (name == "list") return Value::list(iterate(v, pos));
  if (name == "reverse") {
    if (v.is_str()) {
      auto items = iterate(v, pos);
      std::string out;
      for (auto it = items.rbegin(); it != items.rend(); ++it) out += it->s;
      return Value::str(std::move(out));
    }
    auto items = iterate(v, pos);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "int") {
    if (v.is_num()) return Value::integer(as_int(v));
    if (v.is_str()) {
      try {
        return Value::integer(std::stoll(py_strip(v.s, nullptr, true, true)));
      } catch (const std::exception&) {
      }
    }
    return a.get(0, "default", Value::integer(0));
  }
  if (name == "float") {
    if (v.is_num()) return Value::number(num(v));
    if (v.is_str()) {
      try {
        return Value::number(std::stod(v.s));
      } catch (const std::exception&) {
      }
    }
    return a.get(0, "default", Value::number(0));
  }
  if (name == "abs") {
    if (v.t == Value::T::Float) return Value::number(std::fabs(v.f));
    if (v.is_num() && as_int(v) == INT64_MIN) fail(pos, "integer overflow in abs");
    if (v.is_num()) return Value::integer(std::abs(as_int(v)));
    fail(pos, fmt::format("abs needs a number, got {}", type_name(v)));
  }
  if (name == "safe") return v;
  if (name == "e" || name == "escape") {
    std::string out;
    for (char c : to_str(v)) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&#34;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
      }
    }
    return Value::str(std::move(out));
  }
  if (name == "unique") {
    List out;
    for (const auto& x : iterate(v, pos)) {
      bool seen = false;
      for (const auto& y : out) seen = seen || equal(x, y);
      if (!seen) out.push_back(x);
    }
    return Value::list(std::move(out));
  }
  if (name == "map") {
    List out;
    Value attr = a.get(100, "attribute", Value::none());
    for (const auto& x : iterate(v, pos)) {
      if (!attr.is_none()) {
        Value y = getattr(x, to_str(attr), pos);
        if (y.is_undef() && a.has(100, "default")) y = a.get(100, "default", Value());
        out.push_back(y);
      } else {
        if (a.pos.empty()) fail(pos, "map needs a filter name or attribute=");
        Args rest;
        rest.pos.assign(a.pos.begin() + 1, a.pos.end());
        rest.kw = a.kw;
        out.push_back(filter(need_str(a.pos[0], "map"), x, rest));
      }
    }
    return Value::list(std::move(out));
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
    bool attr_form = name == "selectattr" || name == "rejectattr";
    bool want = name == "select" || name == "selectattr";
    size_t k = 0;
    std::string attr;
    if (attr_form) {
      if (a.pos.empty()) fail(pos, fmt::format("{} needs an attribute name", name));
      attr = need_str(a.pos[k++], name);
    }
    std::string tname = k < a.pos.size() ? need_str(a.pos[k++], name) : "";
    Args targs;
    targs.pos.assign(a.pos.begin() + static_cast<std::ptrdiff_t>(std::min(k, a.pos.size())), a.pos.end());
    List out;
    for (const auto& x : iterate(v, pos)) {
      Value y = attr_form ? getattr(x, attr, pos) : x;
      Args copy = targs;
      bool ok = tname.empty() ? truthy(y) : test(tname, y, copy);
      if (ok == want) out.push_back(x);
    }
    return Value::list(std::move(out));
  }
  fail(pos, fmt::format("unknown filter '{}'", name));
}

// ---- tests -----------------------------------------------------------------------------------

bool Interp::test(const std::string& name, const Value& v, Args& a) {
  auto arg = [&]() -> const Value& {
    if (a.pos.empty()) fail(pos, fmt::format("test '{}' needs an argument", name));
    return a.pos[0];
  };
  using T = Value::T;
  if (name == "defined") return !v.is_undef();
  if (name == "undefined") return v.is_undef();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_str();
  if (name == "mapping") return v.t == T::Dict;
  if (name == "iterable") return v.t == T::Str || v.t == T::List || v.t == T::Dict || v.t == T::Undef;
  if (name == "sequence") return v.t == T::Str || v.t == T::List || v.t == T::Dict;
  if (name == "number") return v.t == T::Int || v.t == T::Float || v.t == T::Bool;
  if (name == "integer") return v.t == T::Int;
  if (name == "float") return v.t == T::Float;
  if (name == "boolean") return v.t == T::Bool;
  if (name == "true") return v.t == T::Bool && v.b;
  if (name == "false") return v.t == T::Bool && !v.b;
  if (name == "callable") return v.t == T::Func;
  if (name == "odd" || name == "even") {
    if (!v.is_num()) fail(pos, fmt::format("test '{}' needs a number", name));
    return ((as_int(v) % 2) != 0) == (name == "odd");
  }
  if (name == "divisibleby") {
    int64_t d = as_int(arg());
    if (d == 0) fail(pos, "divisibleby 0");
    return as_int(v) % d == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return equal(v, arg());
  if (name == "ne" || name == "!=") return !equal(v, arg());
  if (name == "lt" || name == "lessthan" || name == "<") return compare(v, arg(), pos, "<") < 0;
  if (name == "le" || name == "<=") return compare(v, arg(), pos, "<=") <= 0;
  if (name == "gt" || name == "greaterthan" || name == ">") return compare(v, arg(), pos, ">") > 0;
  if (name == "ge" || name == ">=") return compare(v, arg(), pos, ">=") >= 0;
  if (name == "in") return contains(arg(), v, pos);
  if (name == "sameas") {
    const Value& o = arg();
    if (v.t != o.t) return false;
    switch (v.t) {
      case T::None:
      case T::Undef: return true;
      case T::Bool: return v.b == o.b;
      case T::Int: return v.i == o.i;
      case T::List: return v.l == o.l;
      case T::Dict:
      case T::NS: return v.d == o.d;
      default: return equal(v, o);
    }
  }
  if (name == "lower") return v.is_str() && ascii_lower(v.s) == v.s;
  if (name == "upper") return v.is_str() && ascii_upper(v.s) == v.s;
  fail(pos, fmt::format("unknown test '{}'", name));
}

}  // namespace rlx::chat
