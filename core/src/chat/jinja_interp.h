// The Jinja interpreter's state and evaluation steps, shared by jinja_eval.cpp (statements and
// expressions, Jinja2's scoping) and jinja_builtins.cpp (filters, tests, and the Python methods
// of str / dict / list that chat templates call). Internal to core/src/chat.
#pragma once

#include <fmt/format.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jinja.h"
#include "rlx/error.h"

namespace rlx::chat {

struct Interp {
  const Program& prog;
  std::vector<std::map<std::string, Value, std::less<>>> frames{};
  std::string* sink = nullptr;  // where text goes
  size_t pos = 0;  // position of the expression being evaluated (for errors)
  // While alive, `pos` is `at` (a call, filter or test reports errors at its own expression).
  struct At {
    Interp& in;
    size_t saved;
    At(Interp& i, size_t at) : in(i), saved(i.pos) { i.pos = at; }
    ~At() { in.pos = saved; }
  };
  int calls = 0;   // macro call depth
  static constexpr size_t kMaxText = size_t{1} << 28;  // 256 MiB: a bound on built strings
  // Loop iterations in one render: real templates run one per message (and per tool or tool
  // call); a template that runs a million is broken or hostile, and would otherwise hang rlx.
  static constexpr size_t kMaxLoopSteps = 1'000'000;
  size_t loop_steps = 0;
  // Every namespace() made in this render. `{% set ns.x = ns %}` makes a reference cycle the
  // shared pointers cannot free; emptying them all when the render ends breaks any cycle.
  std::vector<std::shared_ptr<Dict>> namespaces{};
  ~Interp() {
    for (auto& d : namespaces) d->clear();
  }
  void count_loop_step(size_t at) {
    if (++loop_steps > kMaxLoopSteps)
      fail(at, fmt::format("the template ran more than {} loop iterations", kMaxLoopSteps));
  }

  enum class Flow { Normal, Break, Continue };
  [[noreturn]] void fail(size_t at, std::string_view what) const {
    throw Error(fmt::format("{}: {}", prog.where(at), what));
  }

  // ---- variables -----------------------------------------------------------------------------
  Value lookup(const std::string& name) const;

  // ---- statements ----------------------------------------------------------------------------
  Flow exec(const Body& body);
  Flow exec(const Stmt& st);
  void assign(const Stmt& st, const std::vector<std::string>& names, const Value& v);
  std::vector<Value> iterate(const Value& v, size_t at);
  Flow exec_for(const Stmt& st);
  Value make_macro(const Stmt& st);

  // ---- expressions ---------------------------------------------------------------------------
  static std::string type_name(const Value& v);
  Value eval(const Expr& e);
  Args eval_args(const Expr& e, size_t from);
  Value binary(const Expr& e);
  bool contains(const Value& hay, const Value& needle, size_t at);
  int compare(const Value& l, const Value& r, size_t at, std::string_view op);

  // Python-style index into n items (negative counts from the end); -1 when out of range.
  static int64_t norm_index(int64_t i, int64_t n);
  Value getitem(const Value& obj, const Value& key, size_t at);
  Value getattr(const Value& obj, const std::string& name, size_t at, bool item_first = true);
  Value slice(const Expr& e);

  // ---- methods of str / dict / list --------------------------------------------------------
  Value method(const Value& obj, const std::string& name);
  Value filter(const std::string& name, const Value& v, Args& a);
  bool test(const std::string& name, const Value& v, Args& a);
  std::string need_str(const Value& v, std::string_view what) {
    if (!v.is_str()) fail(pos, fmt::format("{} needs a string, got {}", what, type_name(v)));
    return v.s;
  }
};

}  // namespace rlx::chat
