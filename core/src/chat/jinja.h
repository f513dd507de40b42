// A small Jinja2 interpreter for chat templates: values, the syntax tree, the parser and the
// renderer. Internal to rlx_core; the public face is rlx/chat_template.h.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlx::chat {

struct Value;
using List = std::vector<Value>;
// Python dicts keep insertion order; keys are strings (other keys are stringified).
using Dict = std::vector<std::pair<std::string, Value>>;
struct Args;
struct Interp;
using Fn = std::function<Value(Interp&, Args&)>;

struct Value {
  enum class T { Undef, None, Bool, Int, Float, Str, List, Dict, NS, Func };
  T t = T::Undef;
  bool b = false;                // Bool; for a List: it is a tuple (printed "(a, b)")
  int64_t i = 0;
  double f = 0;
  std::string s;                 // Str; the variable name for Undef (for messages)
  std::shared_ptr<List> l;       // List
  std::shared_ptr<Dict> d;       // Dict and NS (namespace: mutable attributes)
  std::shared_ptr<Fn> fn;        // Func

  static Value undef(std::string name = {}) { Value v; v.s = std::move(name); return v; }
  static Value none() { Value v; v.t = T::None; return v; }
  static Value boolean(bool x) { Value v; v.t = T::Bool; v.b = x; return v; }
  static Value integer(int64_t x) { Value v; v.t = T::Int; v.i = x; return v; }
  static Value number(double x) { Value v; v.t = T::Float; v.f = x; return v; }
  static Value str(std::string x) { Value v; v.t = T::Str; v.s = std::move(x); return v; }
  static Value list(List x = {}) { Value v; v.t = T::List; v.l = std::make_shared<List>(std::move(x)); return v; }
  static Value dict(Dict x = {}) { Value v; v.t = T::Dict; v.d = std::make_shared<Dict>(std::move(x)); return v; }
  static Value ns(Dict x = {}) { Value v; v.t = T::NS; v.d = std::make_shared<Dict>(std::move(x)); return v; }
  static Value func(Fn f) { Value v; v.t = T::Func; v.fn = std::make_shared<Fn>(std::move(f)); return v; }

  bool is_undef() const { return t == T::Undef; }
  bool is_none() const { return t == T::None; }
  bool is_str() const { return t == T::Str; }
  bool is_num() const { return t == T::Int || t == T::Float || t == T::Bool; }
  bool is_list() const { return t == T::List; }
  bool is_dict() const { return t == T::Dict; }
  const Value* find(std::string_view key) const;  // Dict / NS lookup; nullptr when absent
  void set(const std::string& key, Value v);      // Dict / NS store
};

bool truthy(const Value& v);
std::string to_str(const Value& v);     // Python str(): what {{ v }} prints
std::string repr(const Value& v);       // Python repr() (inside lists and dicts)
std::string to_json(const Value& v, int indent = -1, int level = 0);  // json.dumps(ensure_ascii=False)
bool equal(const Value& a, const Value& b);

struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  // Positional i, or keyword `name`, or `def`.
  Value get(size_t i, std::string_view name, const Value& def) const;
  bool has(size_t i, std::string_view name) const;
};

// ---- syntax tree ---------------------------------------------------------------------------

struct Expr;
using ExprP = std::shared_ptr<Expr>;
struct Expr {
  enum class K { Lit, Name, Attr, Item, Slice, Call, Filter, Test, Unary, Binary, Cond, List, Dict };
  K k;
  size_t pos = 0;           // offset in the source (for error messages)
  Value lit;                // Lit
  std::string name;         // Name / Attr / Filter / Test name; Unary / Binary operator
  bool negated = false;     // Test: "is not"
  std::vector<ExprP> a;     // operands: object first, then arguments (may hold nullptr: Slice)
  std::vector<std::pair<std::string, ExprP>> kw;  // keyword arguments; Dict: key exprs in a
};

struct Stmt;
using StmtP = std::shared_ptr<Stmt>;
using Body = std::vector<StmtP>;
struct Stmt {
  enum class K { Text, Out, If, For, Set, SetAttr, SetBlock, Macro, Break, Continue };
  K k;
  size_t pos = 0;
  std::string text;                 // Text; Set / SetAttr / SetBlock / Macro name
  std::vector<std::string> names;   // For / Set targets; Macro parameters; SetAttr: {ns, attr}
  std::vector<ExprP> e;             // If conditions; For {iter, filter?}; Set value; Macro defaults
  std::vector<Body> bodies;         // If: one per condition (+ else); For: {body, else}
};

struct Program {
  std::string label, source;  // source after newline normalisation
  std::vector<size_t> line_starts;
  Body body;
  std::string default_bos, default_eos;  // built-in templates: used when the caller gives none
  std::string where(size_t pos) const;  // "label:line:col"
};

// Parses `source`; throws rlx::Error "label:line:col: what".
std::shared_ptr<Program> parse_program(std::string_view source, std::string_view label);

// Renders with the given top-level variables and globals (functions).
std::string render_program(const Program& p, const Dict& vars);

// For functions given in `vars`: throws rlx::Error naming the template position of the call.
[[noreturn]] void fail_call(Interp& in, std::string_view what);

}  // namespace rlx::chat
