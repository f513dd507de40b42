// Jinja evaluator: runs the parsed tree with Jinja2's scoping (a for loop's body gets a fresh
// scope each iteration; if blocks share the enclosing one; namespace() objects carry values
// out of loops). Filters, tests and methods: jinja_builtins.cpp.
#include <cmath>
#include <map>

#include "jinja_interp.h"
#include "jinja_util.h"

namespace rlx::chat {

Value Interp::lookup(const std::string& name) const {
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    auto f = it->find(name);
    if (f != it->end()) return f->second;
  }
  return Value::undef(name);
}

Interp::Flow Interp::exec(const Body& body) {
  for (const auto& st : body) {
    Flow fl = exec(*st);
    if (fl != Flow::Normal) return fl;
  }
  return Flow::Normal;
}

Interp::Flow Interp::exec(const Stmt& st) {
  switch (st.k) {
    case Stmt::K::Text:
    case Stmt::K::Out:
      if (st.k == Stmt::K::Text)
        *sink += st.text;
      else
        *sink += to_str(eval(*st.e[0]));
      if (sink->size() > kMaxText) fail(st.pos, "the rendered text is over 256 MiB");
      break;
    case Stmt::K::If:
      for (size_t j = 0; j < st.bodies.size(); ++j) {
        if (j >= st.e.size() || truthy(eval(*st.e[j]))) return exec(st.bodies[j]);
      }
      break;
    case Stmt::K::For: return exec_for(st);
    case Stmt::K::Set: {
      Value v = eval(*st.e[0]);
      assign(st, st.names, v);
      break;
    }
    case Stmt::K::SetAttr: {
      Value ns = lookup(st.names[0]);
      if (ns.t != Value::T::NS)
        fail(st.pos, fmt::format("cannot assign attribute on non-namespace object '{}'", st.names[0]));
      ns.set(st.names[1], eval(*st.e[0]));
      break;
    }
    case Stmt::K::SetBlock: {
      std::string captured;
      std::string* saved = sink;
      sink = &captured;
      exec(st.bodies[0]);
      sink = saved;
      frames.back()[st.names[0]] = Value::str(std::move(captured));
      break;
    }
    case Stmt::K::Macro: frames.back()[st.text] = make_macro(st); break;
    case Stmt::K::Break: return Flow::Break;
    case Stmt::K::Continue: return Flow::Continue;
  }
  return Flow::Normal;
}

void Interp::assign(const Stmt& st, const std::vector<std::string>& names, const Value& v) {
  if (names.size() == 1) {
    frames.back()[names[0]] = v;
    return;
  }
  std::vector<Value> items = iterate(v, st.pos);
  if (items.size() != names.size())
    fail(st.pos, fmt::format("cannot unpack {} values into {} names", items.size(), names.size()));
  for (size_t j = 0; j < names.size(); ++j) frames.back()[names[j]] = items[j];
}

std::vector<Value> Interp::iterate(const Value& v, size_t at) {
  switch (v.t) {
    case Value::T::Undef: return {};
    case Value::T::List: return *v.l;
    case Value::T::Dict: {
      std::vector<Value> keys;
      for (const auto& kv : *v.d) keys.push_back(Value::str(kv.first));
      return keys;
    }
    case Value::T::Str: {
      std::vector<size_t> off;
      decode_utf8(v.s, &off);
      std::vector<Value> chars;
      for (size_t j = 0; j + 1 < off.size(); ++j) chars.push_back(Value::str(v.s.substr(off[j], off[j + 1] - off[j])));
      return chars;
    }
    default: fail(at, fmt::format("{} is not iterable", type_name(v)));
  }
}

Interp::Flow Interp::exec_for(const Stmt& st) {
  Value seq = eval(*st.e[0]);
  std::vector<Value> items = iterate(seq, st.e[0]->pos);
  if (st.e.size() > 1) {  // {% for x in xs if cond %}
    std::vector<Value> kept;
    for (const auto& it : items) {
      count_loop_step(st.pos);
      frames.emplace_back();
      assign(st, st.names, it);
      bool keep = truthy(eval(*st.e[1]));
      frames.pop_back();
      if (keep) kept.push_back(it);
    }
    items = std::move(kept);
  }
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t j = 0; j < n; ++j) {
    count_loop_step(st.pos);
    frames.emplace_back();
    assign(st, st.names, items[static_cast<size_t>(j)]);
    Value loop = Value::dict({
        {"index", Value::integer(j + 1)},
        {"index0", Value::integer(j)},
        {"revindex", Value::integer(n - j)},
        {"revindex0", Value::integer(n - j - 1)},
        {"first", Value::boolean(j == 0)},
        {"last", Value::boolean(j == n - 1)},
        {"length", Value::integer(n)},
        {"depth", Value::integer(1)},
        {"depth0", Value::integer(0)},
        {"previtem", j > 0 ? items[static_cast<size_t>(j - 1)] : Value::undef("previtem")},
        {"nextitem", j + 1 < n ? items[static_cast<size_t>(j + 1)] : Value::undef("nextitem")},
    });
    loop.set("cycle", Value::func([j](Interp& in, Args& a) -> Value {
      if (a.pos.empty()) fail_call(in, "loop.cycle() needs at least one argument");
      return a.pos[static_cast<size_t>(j) % a.pos.size()];
    }));
    frames.back()["loop"] = loop;
    Flow fl = exec(st.bodies[0]);
    frames.pop_back();
    if (fl == Flow::Break) break;
  }
  if (n == 0) return exec(st.bodies[1]);
  return Flow::Normal;
}

Value Interp::make_macro(const Stmt& st) {
  const Stmt* m = &st;
  return Value::func([m](Interp& in, Args& a) -> Value {
    std::map<std::string, Value, std::less<>> local;
    for (size_t j = 0; j < m->names.size(); ++j) {
      if (a.has(j, m->names[j])) {
        local[m->names[j]] = a.get(j, m->names[j], Value());
      } else if (m->e[j]) {
        local[m->names[j]] = in.eval(*m->e[j]);
      } else {
        local[m->names[j]] = Value::undef(m->names[j]);
      }
    }
    if (a.pos.size() > m->names.size()) fail_call(in, fmt::format("macro '{}' takes {} arguments", m->text, m->names.size()));
    for (const auto& [k, v] : a.kw)
      if (std::find(m->names.begin(), m->names.end(), k) == m->names.end())
        fail_call(in, fmt::format("macro '{}' has no argument '{}'", m->text, k));
    if (in.calls >= 100) fail_call(in, fmt::format("macro '{}' recursed too deeply", m->text));
    ++in.calls;
    struct Depth {
      int& n;
      ~Depth() { --n; }
    } depth{in.calls};
    auto saved_frames = std::move(in.frames);
    in.frames = {saved_frames.front(), std::move(local)};
    std::string captured;
    std::string* saved_out = in.sink;
    in.sink = &captured;
    try {
      in.exec(m->bodies[0]);
    } catch (...) {
      in.sink = saved_out;
      in.frames = std::move(saved_frames);
      throw;
    }
    in.sink = saved_out;
    in.frames = std::move(saved_frames);
    return Value::str(std::move(captured));
  });
}

std::string Interp::type_name(const Value& v) {
  switch (v.t) {
    case Value::T::Undef: return v.s.empty() ? "undefined" : fmt::format("'{}' (undefined)", v.s);
    case Value::T::None: return "none";
    case Value::T::Bool: return "a boolean";
    case Value::T::Int: return "an integer";
    case Value::T::Float: return "a float";
    case Value::T::Str: return "a string";
    case Value::T::List: return "a list";
    case Value::T::Dict: return "a dict";
    case Value::T::NS: return "a namespace";
    case Value::T::Func: return "a function";
  }
  return "?";
}

Value Interp::eval(const Expr& e) {
  switch (e.k) {
    case Expr::K::Lit: return e.lit;
    case Expr::K::Name: return lookup(e.name);
    case Expr::K::List: {
      List items;
      for (const auto& x : e.a) items.push_back(eval(*x));
      Value v = Value::list(std::move(items));
      v.b = e.lit.t == Value::T::Bool;  // a tuple: (a, b)
      return v;
    }
    case Expr::K::Dict: {
      Value d = Value::dict();
      for (size_t j = 0; j + 1 < e.a.size(); j += 2) {
        Value k = eval(*e.a[j]);
        d.set(k.is_str() ? k.s : to_str(k), eval(*e.a[j + 1]));
      }
      return d;
    }
    case Expr::K::Attr: return getattr(eval(*e.a[0]), e.name, e.pos);
    case Expr::K::Item: return getitem(eval(*e.a[0]), eval(*e.a[1]), e.pos);
    case Expr::K::Slice: return slice(e);
    case Expr::K::Call: {
      Value f = eval(*e.a[0]);
      Args args = eval_args(e, 1);
      if (f.is_undef() && e.a[0]->k == Expr::K::Name) fail(e.pos, fmt::format("'{}' is undefined", e.a[0]->name));
      if (f.t != Value::T::Func) {
        std::string what = e.a[0]->k == Expr::K::Name ? "'" + e.a[0]->name + "'"
                           : e.a[0]->k == Expr::K::Attr ? "'" + e.a[0]->name + "'"
                                                         : std::string("the value");
        fail(e.pos, fmt::format("{} is not callable ({})", what, type_name(f)));
      }
      At at(*this, e.pos);
      return (*f.fn)(*this, args);
    }
    case Expr::K::Filter: {
      Value v = eval(*e.a[0]);
      Args args = eval_args(e, 1);
      At at(*this, e.pos);
      return filter(e.name, v, args);
    }
    case Expr::K::Test: {
      Value v = eval(*e.a[0]);
      Args args = eval_args(e, 1);
      At at(*this, e.pos);
      return Value::boolean(test(e.name, v, args) != e.negated);
    }
    case Expr::K::Unary: {
      Value v = eval(*e.a[0]);
      if (e.name == "not") return Value::boolean(!truthy(v));
      if (v.t == Value::T::Int || v.t == Value::T::Bool) {
        if (e.name == "-" && as_int(v) == INT64_MIN) fail(e.pos, "integer overflow in unary -");
        return Value::integer(e.name == "-" ? -as_int(v) : as_int(v));
      }
      if (v.t == Value::T::Float) return Value::number(e.name == "-" ? -v.f : v.f);
      fail(e.pos, fmt::format("bad operand for unary {}: {}", e.name, type_name(v)));
    }
    case Expr::K::Binary: return binary(e);
    case Expr::K::Cond:
      if (truthy(eval(*e.a[0]))) return eval(*e.a[1]);
      return e.a[2] ? eval(*e.a[2]) : Value::undef();
  }
  return Value();
}

Args Interp::eval_args(const Expr& e, size_t from) {
  Args a;
  for (size_t j = from; j < e.a.size(); ++j) a.pos.push_back(eval(*e.a[j]));
  for (const auto& [k, x] : e.kw) a.kw.push_back({k, eval(*x)});
  return a;
}

Value Interp::binary(const Expr& e) {
  const std::string& op = e.name;
  Value l = eval(*e.a[0]);
  if (op == "and") return truthy(l) ? eval(*e.a[1]) : l;
  if (op == "or") return truthy(l) ? l : eval(*e.a[1]);
  Value r = eval(*e.a[1]);
  if (op == "==") return Value::boolean(equal(l, r));
  if (op == "!=") return Value::boolean(!equal(l, r));
  if (op == "in") return Value::boolean(contains(r, l, e.pos));
  if (op == "not in") return Value::boolean(!contains(r, l, e.pos));
  if (op == "<" || op == "<=" || op == ">" || op == ">=") {
    int c = compare(l, r, e.pos, op);
    return Value::boolean(op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0);
  }
  if (op == "~") return Value::str(to_str(l) + to_str(r));
  if (op == "+") {
    if (l.is_str() && r.is_str()) return Value::str(l.s + r.s);
    if (l.is_list() && r.is_list()) {
      List items = *l.l;
      items.insert(items.end(), r.l->begin(), r.l->end());
      return Value::list(std::move(items));
    }
  }
  if (op == "*") {
    const Value* s = l.is_str() || l.is_list() ? &l : r.is_str() || r.is_list() ? &r : nullptr;
    const Value* n = s == &l ? &r : &l;
    if (s && (n->t == Value::T::Int || n->t == Value::T::Bool)) {
      int64_t times = std::max<int64_t>(0, as_int(*n));
      size_t unit = s->is_str() ? s->s.size() : s->l->size() * 16;
      if (times > 0 && unit > 0 && static_cast<uint64_t>(times) > kMaxText / unit)
        fail(e.pos, "result of '*' is too large");
      if (s->is_str()) {
        std::string out;
        for (int64_t k = 0; k < times; ++k) out += s->s;
        return Value::str(std::move(out));
      }
      List items;
      for (int64_t k = 0; k < times; ++k) items.insert(items.end(), s->l->begin(), s->l->end());
      return Value::list(std::move(items));
    }
  }
  if (!l.is_num() || !r.is_num())
    fail(e.pos, fmt::format("unsupported operands for '{}': {} and {}", op, type_name(l), type_name(r)));
  bool ints = l.t != Value::T::Float && r.t != Value::T::Float;
  // Integers are 64-bit here (Python's are unbounded): overflow is an error, not a wrap.
  if (ints && (op == "+" || op == "-" || op == "*")) {
    int64_t v = 0;
    const int64_t a = as_int(l), b = as_int(r);
    const bool over = op == "+"   ? __builtin_add_overflow(a, b, &v)
                      : op == "-" ? __builtin_sub_overflow(a, b, &v)
                                  : __builtin_mul_overflow(a, b, &v);
    if (over) fail(e.pos, fmt::format("integer overflow in '{}'", op));
    return Value::integer(v);
  }
  if (op == "+") return Value::number(num(l) + num(r));
  if (op == "-") return Value::number(num(l) - num(r));
  if (op == "*") return Value::number(num(l) * num(r));
  if (op == "/") {
    if (num(r) == 0) fail(e.pos, "division by zero");
    return Value::number(num(l) / num(r));
  }
  if (op == "//" || op == "%") {
    if (num(r) == 0) fail(e.pos, op == "%" ? "modulo by zero" : "division by zero");
    if (ints) {
      int64_t a = as_int(l), b = as_int(r);
      if (a == INT64_MIN && b == -1) fail(e.pos, fmt::format("integer overflow in '{}'", op));
      int64_t q = a / b, m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) {
        --q;
        m += b;
      }
      return Value::integer(op == "//" ? q : m);
    }
    double a = num(l), b = num(r);
    double q = std::floor(a / b);
    return Value::number(op == "//" ? q : a - q * b);
  }
  if (op == "**") {
    if (ints && as_int(r) >= 0) {
      int64_t out = 1, base = as_int(l);
      bool over = false;
      for (int64_t k = as_int(r); k > 0 && !over; k >>= 1) {  // square and multiply
        if (k & 1) over = __builtin_mul_overflow(out, base, &out);
        if (k > 1 && !over) over = __builtin_mul_overflow(base, base, &base);
      }
      if (over) fail(e.pos, "integer overflow in '**'");
      return Value::integer(out);
    }
    return Value::number(std::pow(num(l), num(r)));
  }
  fail(e.pos, fmt::format("unknown operator '{}'", op));
}

bool Interp::contains(const Value& hay, const Value& needle, size_t at) {
  switch (hay.t) {
    case Value::T::Undef: return false;
    case Value::T::Str:
      if (!needle.is_str()) fail(at, fmt::format("'in <string>' needs a string, not {}", type_name(needle)));
      return hay.s.find(needle.s) != std::string::npos;
    case Value::T::List:
      for (const auto& x : *hay.l)
        if (equal(x, needle)) return true;
      return false;
    case Value::T::Dict:
    case Value::T::NS: return needle.is_str() && hay.find(needle.s) != nullptr;
    default: fail(at, fmt::format("'in' needs a string, list or dict, not {}", type_name(hay)));
  }
}

int Interp::compare(const Value& l, const Value& r, size_t at, std::string_view op) {
  if (l.is_num() && r.is_num()) {
    double a = num(l), b = num(r);
    return a < b ? -1 : a > b ? 1 : 0;
  }
  if (l.is_str() && r.is_str()) return l.s < r.s ? -1 : l.s > r.s ? 1 : 0;
  if (l.is_list() && r.is_list()) {
    for (size_t j = 0; j < std::min(l.l->size(), r.l->size()); ++j) {
      if (equal((*l.l)[j], (*r.l)[j])) continue;
      return compare((*l.l)[j], (*r.l)[j], at, op);
    }
    return l.l->size() < r.l->size() ? -1 : l.l->size() > r.l->size() ? 1 : 0;
  }
  fail(at, fmt::format("'{}' not supported between {} and {}", op, type_name(l), type_name(r)));
}

int64_t Interp::norm_index(int64_t i, int64_t n) {
  if (i < 0) i += n;
  return i < 0 || i >= n ? -1 : i;
}

Value Interp::getitem(const Value& obj, const Value& key, size_t at) {
  switch (obj.t) {
    case Value::T::Undef:
    case Value::T::None: return Value::undef();
    case Value::T::List:
      if (key.t == Value::T::Int || key.t == Value::T::Bool) {
        int64_t j = norm_index(as_int(key), static_cast<int64_t>(obj.l->size()));
        return j < 0 ? Value::undef() : (*obj.l)[static_cast<size_t>(j)];
      }
      break;
    case Value::T::Str:
      if (key.t == Value::T::Int || key.t == Value::T::Bool) {
        std::vector<size_t> off;
        decode_utf8(obj.s, &off);
        int64_t j = norm_index(as_int(key), static_cast<int64_t>(off.size()) - 1);
        if (j < 0) return Value::undef();
        auto u = static_cast<size_t>(j);
        return Value::str(obj.s.substr(off[u], off[u + 1] - off[u]));
      }
      break;
    case Value::T::Dict:
    case Value::T::NS: {
      std::string k = key.is_str() ? key.s : to_str(key);
      if (const Value* v = obj.find(k)) return *v;
      break;
    }
    default: break;
  }
  if (key.is_str()) return getattr(obj, key.s, at, /*item_first=*/false);
  return Value::undef();
}

Value Interp::getattr(const Value& obj, const std::string& name, size_t at, bool item_first) {
  if (obj.t == Value::T::Undef || obj.t == Value::T::None) return Value::undef(name);
  if (obj.t == Value::T::Dict && item_first) {
    // Python attributes (dict methods) come before keys, as in Jinja's getattr.
    if (Value m = method(obj, name); m.t == Value::T::Func) return m;
    if (const Value* v = obj.find(name)) return *v;
    return Value::undef(name);
  }
  if (obj.t == Value::T::NS) {
    if (const Value* v = obj.find(name)) return *v;
    return Value::undef(name);
  }
  (void)at;
  Value m = method(obj, name);
  return m.t == Value::T::Func ? m : Value::undef(name);
}

Value Interp::slice(const Expr& e) {
  Value obj = eval(*e.a[0]);
  Value idx[3];
  for (int k = 0; k < 3; ++k) {
    if (e.a[static_cast<size_t>(k) + 1]) {
      idx[k] = eval(*e.a[static_cast<size_t>(k) + 1]);
      if (idx[k].is_none()) continue;
      if (idx[k].t != Value::T::Int && idx[k].t != Value::T::Bool)
        fail(e.pos, "slice indices must be integers or none");
    }
  }
  int64_t step = idx[2].t == Value::T::Undef || idx[2].is_none() ? 1 : as_int(idx[2]);
  if (step == 0) fail(e.pos, "slice step cannot be zero");
  std::vector<size_t> off;
  int64_t n;
  if (obj.is_list()) {
    n = static_cast<int64_t>(obj.l->size());
  } else if (obj.is_str()) {
    decode_utf8(obj.s, &off);
    n = static_cast<int64_t>(off.size()) - 1;
  } else if (obj.is_undef()) {
    return Value::undef();
  } else {
    fail(e.pos, fmt::format("cannot slice {}", type_name(obj)));
  }
  auto bound = [&](const Value& v, int64_t def) {
    if (v.t == Value::T::Undef || v.is_none()) return def;
    int64_t i = as_int(v);
    if (i < 0) i += n;
    if (step > 0) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  int64_t start = bound(idx[0], step > 0 ? 0 : n - 1);
  int64_t stop = bound(idx[1], step > 0 ? n : -1);
  std::vector<int64_t> picks;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) picks.push_back(i);
  if (obj.is_list()) {
    List items;
    for (int64_t i : picks) items.push_back((*obj.l)[static_cast<size_t>(i)]);
    return Value::list(std::move(items));
  }
  std::string s;
  for (int64_t i : picks) {
    auto u = static_cast<size_t>(i);
    s.append(obj.s, off[u], off[u + 1] - off[u]);
  }
  return Value::str(std::move(s));
}

void fail_call(Interp& in, std::string_view what) { in.fail(in.pos, what); }

// ---- entry point -----------------------------------------------------------------------------

std::string render_program(const Program& p, const Dict& vars) {
  Interp in{.prog = p};
  in.frames.emplace_back();
  auto& g = in.frames.back();
  g["raise_exception"] = Value::func([](Interp& i, Args& a) -> Value {
    fail_call(i, fmt::format("raise_exception: {}", to_str(a.get(0, "message", Value()))));
  });
  g["namespace"] = Value::func([](Interp& in, Args& a) {
    Value ns = Value::ns();
    in.namespaces.push_back(ns.d);
    for (const auto& x : a.pos)
      if (x.is_dict())
        for (const auto& [k, v] : *x.d) ns.set(k, v);
    for (const auto& [k, v] : a.kw) ns.set(k, v);
    return ns;
  });
  g["dict"] = Value::func([](Interp&, Args& a) {
    Value d = Value::dict();
    for (const auto& x : a.pos)
      if (x.is_dict())
        for (const auto& [k, v] : *x.d) d.set(k, v);
    for (const auto& [k, v] : a.kw) d.set(k, v);
    return d;
  });
  g["range"] = Value::func([](Interp& i, Args& a) {
    int64_t start = 0, stop, step = 1;
    if (a.pos.empty()) fail_call(i, "range() needs an argument");
    for (const auto& x : a.pos)
      if (x.t != Value::T::Int && x.t != Value::T::Bool) fail_call(i, "range() needs integers");
    if (a.pos.size() == 1) {
      stop = as_int(a.pos[0]);
    } else {
      start = as_int(a.pos[0]);
      stop = as_int(a.pos[1]);
      if (a.pos.size() > 2) step = as_int(a.pos[2]);
    }
    if (step == 0) fail_call(i, "range() step cannot be zero");
    List out;
    for (int64_t k = start; step > 0 ? k < stop : k > stop;) {
      out.push_back(Value::integer(k));
      if (out.size() > 10'000'000) fail_call(i, "range() is too long");
      if (__builtin_add_overflow(k, step, &k)) break;  // past the int64 range: the end
    }
    return Value::list(std::move(out));
  });
  for (const auto& [k, v] : vars) g[k] = v;
  std::string out;
  in.sink = &out;
  in.exec(p.body);  // a break / continue outside a loop just stops, as nothing follows
  return out;
}

}  // namespace rlx::chat
