// Jinja lexer and parser: the template is split into text, {{ expression }} and {% statement %}
// pieces with whitespace control applied the way Jinja2 does it with trim_blocks=True and
// lstrip_blocks=True (what Hugging Face renders chat templates with), then parsed into a tree.
#include <algorithm>
#include <cctype>
#include <set>

#include "../tokenizer/utf8.h"
#include "jinja.h"
#include "rlx/error.h"

namespace rlx::chat {

std::string Program::where(size_t pos) const {
  auto it = std::upper_bound(line_starts.begin(), line_starts.end(), pos);
  size_t line = static_cast<size_t>(it - line_starts.begin());  // 1-based
  size_t col = pos - line_starts[line - 1] + 1;
  return fmt::format("{}:{}:{}", label, line, col);
}

namespace {

// ---- lexer ---------------------------------------------------------------------------------

enum class TokK { Name, Str, Int, Float, Op, End };
struct Tok {
  TokK k;
  std::string s;  // name / operator / decoded string
  int64_t i = 0;
  double f = 0;
  size_t pos = 0;
};

enum class SegK { Text, Var, Block };
struct Seg {
  SegK k;
  size_t pos;
  std::string text;       // Text
  std::vector<Tok> toks;  // Var / Block (ends with an End token)
};

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

class Lexer {
 public:
  explicit Lexer(Program& p) : p_(p), src_(p.source) {}

  std::vector<Seg> run() {
    std::vector<Seg> segs;
    size_t pos = 0;
    bool line_starting = true;  // the previous tag's match ended with a newline
    while (pos < src_.size()) {
      size_t open = find_open(pos);
      std::string text = src_.substr(pos, (open == std::string::npos ? src_.size() : open) - pos);
      size_t text_pos = pos;
      if (open == std::string::npos) {
        push_text(segs, std::move(text), text_pos);
        break;
      }
      char kind = src_[open + 1];  // '{', '%' or '#'
      size_t q = open + 2;
      char sign = q < src_.size() && (src_[q] == '-' || src_[q] == '+') ? src_[q] : 0;
      if (sign) ++q;
      if (sign == '-') {
        size_t e = text.size();
        while (e > 0 && is_ws(text[e - 1])) --e;
        text.resize(e);
      } else if (sign != '+' && kind != '{') {  // lstrip_blocks
        size_t l = text.rfind('\n');
        l = l == std::string::npos ? 0 : l + 1;
        if (l > 0 || line_starting) {
          bool blank = l < text.size();
          for (size_t j = l; j < text.size(); ++j) blank = blank && is_ws(text[j]);
          if (blank) text.resize(l);
        }
      }
      push_text(segs, std::move(text), text_pos);

      size_t end;  // just past the closing delimiter
      bool strip_after = false, keep_newline = false;
      if (kind == '#') {
        size_t c = src_.find("#}", q);
        if (c == std::string::npos) fail_at(open, "unterminated comment");
        strip_after = c > q && src_[c - 1] == '-';
        end = c + 2;
      } else {
        Seg s{kind == '{' ? SegK::Var : SegK::Block, open, {}, {}};
        end = tokenize(q, kind == '{' ? '}' : '%', s.toks, strip_after, keep_newline);
        if (s.k == SegK::Block && s.toks.size() == 2 && s.toks[0].k == TokK::Name &&
            s.toks[0].s == "raw") {
          end = raw_block(end, segs);
          strip_after = false;
          keep_newline = raw_keep_;
          strip_after = raw_strip_;
        } else {
          segs.push_back(std::move(s));
        }
      }
      line_starting = false;
      if (strip_after) {
        while (end < src_.size() && is_ws(src_[end])) {
          line_starting = src_[end] == '\n';
          ++end;
        }
      } else if (kind != '{' && !keep_newline && end < src_.size() && src_[end] == '\n') {
        ++end;  // trim_blocks
        line_starting = true;
      }
      pos = end;
    }
    return segs;
  }

 private:
  Program& p_;
  const std::string& src_;
  bool raw_keep_ = false, raw_strip_ = false;

  [[noreturn]] void fail_at(size_t pos, std::string_view what) {
    throw Error(fmt::format("{}: {}", p_.where(pos), what));
  }

  void push_text(std::vector<Seg>& segs, std::string text, size_t pos) {
    if (!text.empty()) segs.push_back(Seg{SegK::Text, pos, std::move(text), {}});
  }

  size_t find_open(size_t pos) const {
    for (size_t j = src_.find('{', pos); j != std::string::npos; j = src_.find('{', j + 1)) {
      if (j + 1 < src_.size() && (src_[j + 1] == '{' || src_[j + 1] == '%' || src_[j + 1] == '#'))
        return j;
    }
    return std::string::npos;
  }

  // {% raw %}...{% endraw %}: the text in between is kept as is (lstrip / trim still apply at
  // the edges, as in Jinja).
  size_t raw_block(size_t pos, std::vector<Seg>& segs) {
    size_t j = pos;
    while (true) {
      j = src_.find("{%", j);
      if (j == std::string::npos) fail_at(pos, "missing {% endraw %}");
      size_t q = j + 2;
      char sign = q < src_.size() && (src_[q] == '-' || src_[q] == '+') ? src_[q] : 0;
      if (sign) ++q;
      while (q < src_.size() && is_ws(src_[q])) ++q;
      if (src_.compare(q, 6, "endraw") == 0) {
        q += 6;
        while (q < src_.size() && is_ws(src_[q])) ++q;
        bool minus = q < src_.size() && src_[q] == '-';
        bool plus = q < src_.size() && src_[q] == '+';
        if (minus || plus) ++q;
        if (src_.compare(q, 2, "%}") == 0) {
          std::string text = src_.substr(pos, j - pos);
          if (sign == '-') {
            while (!text.empty() && is_ws(text.back())) text.pop_back();
          } else if (sign != '+') {
            size_t l = text.rfind('\n');
            l = l == std::string::npos ? 0 : l + 1;
            bool blank = l < text.size();
            for (size_t k = l; k < text.size(); ++k) blank = blank && is_ws(text[k]);
            if (blank && l > 0) text.resize(l);
          }
          push_text(segs, std::move(text), pos);
          raw_strip_ = minus;
          raw_keep_ = plus;
          return q + 2;
        }
      }
      j += 2;
    }
  }

  // Tokens from `pos` up to the closing "}}" / "%}" (outside brackets); returns the offset
  // just past it.
  size_t tokenize(size_t pos, char close, std::vector<Tok>& out, bool& strip_after,
                  bool& keep_newline) {
    int depth = 0;
    size_t j = pos;
    while (true) {
      while (j < src_.size() && is_ws(src_[j])) ++j;
      if (j >= src_.size()) fail_at(pos, close == '}' ? "missing '}}'" : "missing '%}'");
      char c = src_[j];
      if (depth == 0) {
        if (c == close && j + 1 < src_.size() && src_[j + 1] == '}') {
          out.push_back(Tok{TokK::End, "", 0, 0, j});
          return j + 2;
        }
        if ((c == '-' || (c == '+' && close == '%')) && j + 2 < src_.size() &&
            src_[j + 1] == close && src_[j + 2] == '}') {
          strip_after = c == '-';
          keep_newline = c == '+';
          out.push_back(Tok{TokK::End, "", 0, 0, j});
          return j + 3;
        }
      }
      size_t start = j;
      if (is_name_start(c)) {
        while (j < src_.size() && is_name_char(src_[j])) ++j;
        out.push_back(Tok{TokK::Name, src_.substr(start, j - start), 0, 0, start});
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        bool is_float = false;
        std::string num;
        while (j < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[j])) || src_[j] == '_')) {
          if (src_[j] != '_') num += src_[j];
          ++j;
        }
        if (j + 1 < src_.size() && src_[j] == '.' && std::isdigit(static_cast<unsigned char>(src_[j + 1]))) {
          is_float = true;
          num += src_[j++];
          while (j < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[j])) || src_[j] == '_')) {
            if (src_[j] != '_') num += src_[j];
            ++j;
          }
        }
        if (j < src_.size() && (src_[j] == 'e' || src_[j] == 'E')) {
          size_t k = j + 1;
          if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
          if (k < src_.size() && std::isdigit(static_cast<unsigned char>(src_[k]))) {
            is_float = true;
            num += 'e';
            num.append(src_, j + 1, k - j - 1);
            j = k;
            while (j < src_.size() && std::isdigit(static_cast<unsigned char>(src_[j]))) num += src_[j++];
          }
        }
        Tok t{is_float ? TokK::Float : TokK::Int, num, 0, 0, start};
        try {
          if (is_float) t.f = std::stod(num); else t.i = std::stoll(num);
        } catch (const std::exception&) {
          fail_at(start, "number out of range");
        }
        out.push_back(std::move(t));
      } else if (c == '\'' || c == '"') {
        out.push_back(Tok{TokK::Str, read_string(j), 0, 0, start});
      } else {
        static const char* two[] = {"//", "**", "==", "!=", "<=", ">="};
        std::string op(1, c);
        for (const char* t : two)
          if (src_.compare(j, 2, t) == 0) op = t;
        static const std::string singles = "+-*/%~<>=()[]{}.,:|";
        if (op.size() == 1 && singles.find(c) == std::string::npos)
          fail_at(j, fmt::format("unexpected character '{}'", c));
        if (op == "(" || op == "[" || op == "{") ++depth;
        if (op == ")" || op == "]" || op == "}") {
          if (depth == 0) fail_at(j, fmt::format("unexpected '{}'", op));
          --depth;
        }
        j += op.size();
        out.push_back(Tok{TokK::Op, op, 0, 0, start});
      }
    }
  }

  // A quoted string with Python escapes; j points at the quote and ends past the closing one.
  std::string read_string(size_t& j) {
    char q = src_[j];
    size_t start = j++;
    std::string out;
    while (true) {
      if (j >= src_.size()) fail_at(start, "unterminated string");
      char c = src_[j];
      if (c == q) {
        ++j;
        return out;
      }
      if (c != '\\') {
        out += c;
        ++j;
        continue;
      }
      if (j + 1 >= src_.size()) fail_at(start, "unterminated string");
      char e = src_[j + 1];
      j += 2;
      auto hex = [&](int n) {
        uint32_t v = 0;
        for (int k = 0; k < n; ++k, ++j) {
          if (j >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[j])))
            fail_at(j, "bad escape in string");
          char h = static_cast<char>(std::tolower(static_cast<unsigned char>(src_[j])));
          v = v * 16 + static_cast<uint32_t>(h <= '9' ? h - '0' : h - 'a' + 10);
        }
        return v;
      };
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case '\n': break;  // line continuation
        case 'x': out += utf8_encode(hex(2)); break;
        case 'u': out += utf8_encode(hex(4)); break;
        case 'U': out += utf8_encode(hex(8)); break;
        default:
          if (e >= '0' && e <= '7') {
            uint32_t v = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && j < src_.size() && src_[j] >= '0' && src_[j] <= '7'; ++k, ++j)
              v = v * 8 + static_cast<uint32_t>(src_[j] - '0');
            out += utf8_encode(v);
          } else {  // unknown escape: kept as is (Python)
            out += '\\';
            out += e;
          }
      }
    }
  }
};

// ---- parser --------------------------------------------------------------------------------

// What jinja_eval.cpp implements (an unknown name is a syntax error, as in Jinja).
constexpr std::string_view kFilters[] = {
    "trim", "length", "count", "tojson", "string", "upper", "lower", "title", "capitalize",
    "default", "d", "first", "last", "join", "replace", "items", "list", "reverse", "int",
    "float", "abs", "safe", "e", "escape", "unique", "map", "select", "reject", "selectattr",
    "rejectattr"};
constexpr std::string_view kTests[] = {
    "defined", "undefined", "none", "string", "mapping", "iterable", "sequence", "number",
    "integer", "float", "boolean", "true", "false", "callable", "odd", "even", "divisibleby",
    "eq", "equalto", "ne", "lt", "lessthan", "le", "gt", "greaterthan", "ge", "in", "sameas",
    "lower", "upper"};
template <size_t N>
bool known(const std::string_view (&names)[N], std::string_view n) {
  return std::find(std::begin(names), std::end(names), n) != std::end(names);
}

class Parser {
 public:
  Parser(Program& p, std::vector<Seg> segs) : p_(p), segs_(std::move(segs)) {}

  Body run() {
    std::string end;
    Body b = body({}, end);
    return b;
  }

 private:
  Program& p_;
  std::vector<Seg> segs_;
  size_t si_ = 0;           // current segment
  const std::vector<Tok>* toks_ = nullptr;
  size_t ti_ = 0;           // current token in the current tag
  std::vector<std::pair<std::string, size_t>> open_;  // open block tags, for messages
  int loops_ = 0;  // enclosing for loops (break / continue need one)
  int depth_ = 0;  // nesting of expressions and blocks (a hostile template cannot overflow the stack)

  struct Nest {
    Parser& p;
    Nest(Parser& parser, size_t pos) : p(parser) {
      if (++p.depth_ > 400) p.fail_at(pos, "nested too deeply");
    }
    ~Nest() { --p.depth_; }
  };

  [[noreturn]] void fail_at(size_t pos, std::string_view what) {
    throw Error(fmt::format("{}: {}", p_.where(pos), what));
  }

  const Tok& cur() const { return (*toks_)[ti_]; }
  const Tok& peek(size_t n = 1) const {
    size_t k = std::min(ti_ + n, toks_->size() - 1);
    return (*toks_)[k];
  }
  bool is_op(std::string_view op) const { return cur().k == TokK::Op && cur().s == op; }
  bool is_name(std::string_view n) const { return cur().k == TokK::Name && cur().s == n; }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    ++ti_;
    return true;
  }
  bool skip_name(std::string_view n) {
    if (!is_name(n)) return false;
    ++ti_;
    return true;
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) fail_at(cur().pos, fmt::format("expected '{}', got {}", op, describe(cur())));
  }
  std::string expect_name() {
    if (cur().k != TokK::Name) fail_at(cur().pos, fmt::format("expected a name, got {}", describe(cur())));
    return (*toks_)[ti_++].s;
  }
  void expect_end() {
    if (cur().k != TokK::End) fail_at(cur().pos, fmt::format("expected the end of the tag, got {}", describe(cur())));
  }
  static std::string describe(const Tok& t) {
    switch (t.k) {
      case TokK::End: return "the end of the tag";
      case TokK::Str: return "a string";
      case TokK::Int:
      case TokK::Float: return fmt::format("'{}'", t.s);
      default: return fmt::format("'{}'", t.s);
    }
  }

  ExprP node(Expr::K k, size_t pos) {
    auto e = std::make_shared<Expr>();
    e->k = k;
    e->pos = pos;
    return e;
  }

  // Statements up to one of `ends` (a block tag whose first name is in the set); `end` gets
  // the tag name found (the tag's tokens are left current, past the name).
  Body body(const std::set<std::string>& ends, std::string& end) {
    Body out;
    while (si_ < segs_.size()) {
      Seg& s = segs_[si_++];
      if (s.k == SegK::Text) {
        auto st = std::make_shared<Stmt>();
        st->k = Stmt::K::Text;
        st->pos = s.pos;
        st->text = std::move(s.text);
        out.push_back(st);
        continue;
      }
      toks_ = &s.toks;
      ti_ = 0;
      if (s.k == SegK::Var) {
        auto st = std::make_shared<Stmt>();
        st->k = Stmt::K::Out;
        st->pos = s.pos;
        if (cur().k == TokK::End) fail_at(cur().pos, "expected an expression");
        st->e.push_back(tuple_expr());
        expect_end();
        out.push_back(st);
        continue;
      }
      if (cur().k != TokK::Name) fail_at(cur().pos, "expected a statement name");
      std::string name = cur().s;
      if (ends.count(name)) {
        ++ti_;
        end = name;
        return out;
      }
      statement(out, s.pos);
    }
    if (!ends.empty()) {
      auto& [tag, pos] = open_.back();
      fail_at(pos, fmt::format("'{}' is never closed (expected one of: {})", tag,
                               fmt::join(ends, ", ")));
    }
    return out;
  }

  void statement(Body& out, size_t seg_pos) {
    size_t pos = cur().pos;
    Nest nest(*this, pos);
    std::string name = expect_name();
    auto st = std::make_shared<Stmt>();
    st->pos = pos;
    std::string end;
    if (name == "if") {
      st->k = Stmt::K::If;
      open_.push_back({"if", pos});
      st->e.push_back(expr());
      expect_end();
      while (true) {
        st->bodies.push_back(body({"elif", "else", "endif"}, end));
        if (end == "elif") {
          st->e.push_back(expr());
          expect_end();
        } else if (end == "else") {
          expect_end();
          st->bodies.push_back(body({"endif"}, end));
          expect_end();
          break;
        } else {
          expect_end();
          break;
        }
      }
      open_.pop_back();
    } else if (name == "for") {
      st->k = Stmt::K::For;
      open_.push_back({"for", pos});
      st->names = targets();
      if (!skip_name("in")) fail_at(cur().pos, "expected 'in' in the for loop");
      st->e.push_back(tuple_expr(false));
      if (skip_name("if")) st->e.push_back(expr());
      if (skip_name("recursive")) fail_at(pos, "recursive loops are not supported");
      expect_end();
      ++loops_;
      st->bodies.push_back(body({"else", "endfor"}, end));
      --loops_;
      if (end == "else") {
        expect_end();
        st->bodies.push_back(body({"endfor"}, end));
      } else {
        st->bodies.emplace_back();
      }
      expect_end();
      open_.pop_back();
    } else if (name == "set") {
      std::string first = expect_name();
      if (skip_op(".")) {
        st->k = Stmt::K::SetAttr;
        st->names = {first, expect_name()};
        expect_op("=");
        st->e.push_back(tuple_expr());
        expect_end();
      } else {
        st->names = {first};
        while (skip_op(",")) st->names.push_back(expect_name());
        if (skip_op("=")) {
          st->k = Stmt::K::Set;
          st->e.push_back(tuple_expr());
          expect_end();
        } else {
          if (st->names.size() != 1) fail_at(cur().pos, "expected '='");
          st->k = Stmt::K::SetBlock;
          if (cur().k == TokK::Op && cur().s == "|") fail_at(cur().pos, "filtered block set is not supported");
          expect_end();
          open_.push_back({"set", pos});
          st->bodies.push_back(body({"endset"}, end));
          expect_end();
          open_.pop_back();
        }
      }
    } else if (name == "macro") {
      st->k = Stmt::K::Macro;
      st->text = expect_name();
      expect_op("(");
      while (!skip_op(")")) {
        st->names.push_back(expect_name());
        st->e.push_back(skip_op("=") ? expr() : nullptr);
        if (!is_op(")")) expect_op(",");
      }
      expect_end();
      open_.push_back({"macro", pos});
      int saved_loops = loops_;
      loops_ = 0;
      st->bodies.push_back(body({"endmacro"}, end));
      loops_ = saved_loops;
      if (cur().k == TokK::Name) ++ti_;  // {% endmacro name %}
      expect_end();
      open_.pop_back();
    } else if (name == "break" || name == "continue") {
      st->k = name == "break" ? Stmt::K::Break : Stmt::K::Continue;
      if (loops_ == 0) fail_at(pos, fmt::format("'{}' outside a for loop", name));
      expect_end();
    } else if (name == "generation") {  // HF's assistant-mask marker: renders its body
      expect_end();
      open_.push_back({"generation", pos});
      Body inner = body({"endgeneration"}, end);
      expect_end();
      open_.pop_back();
      out.insert(out.end(), inner.begin(), inner.end());
      return;
    } else {
      (void)seg_pos;
      fail_at(pos, fmt::format("unknown or unsupported tag '{}'", name));
    }
    out.push_back(st);
  }

  std::vector<std::string> targets() {
    std::vector<std::string> names;
    bool paren = skip_op("(");
    names.push_back(expect_name());
    while (skip_op(",")) {
      if (is_name("in") || is_op(")")) break;
      names.push_back(expect_name());
    }
    if (paren) expect_op(")");
    return names;
  }

  // An expression, or a tuple "a, b" (a list value).
  ExprP tuple_expr(bool with_cond = true) {
    size_t pos = cur().pos;
    ExprP first = with_cond ? expr() : or_expr();
    if (!is_op(",")) return first;
    auto lst = node(Expr::K::List, pos);
    lst->lit = Value::boolean(true);  // a tuple
    lst->a.push_back(first);
    while (skip_op(",")) {
      if (cur().k == TokK::End || is_op("=") || is_op(")")) break;
      lst->a.push_back(with_cond ? expr() : or_expr());
    }
    return lst;
  }

  ExprP expr() {
    Nest nest(*this, cur().pos);
    ExprP e = or_expr();
    while (is_name("if")) {
      size_t pos = cur().pos;
      ++ti_;
      auto c = node(Expr::K::Cond, pos);
      c->a.push_back(or_expr());  // condition
      c->a.push_back(e);           // then
      c->a.push_back(skip_name("else") ? expr() : nullptr);
      e = c;
    }
    return e;
  }

  ExprP binary(std::string op, ExprP l, ExprP r, size_t pos) {
    auto b = node(Expr::K::Binary, pos);
    b->name = std::move(op);
    b->a = {std::move(l), std::move(r)};
    return b;
  }

  ExprP or_expr() {
    ExprP e = and_expr();
    while (is_name("or")) {
      size_t pos = cur().pos;
      ++ti_;
      e = binary("or", e, and_expr(), pos);
    }
    return e;
  }
  ExprP and_expr() {
    ExprP e = not_expr();
    while (is_name("and")) {
      size_t pos = cur().pos;
      ++ti_;
      e = binary("and", e, not_expr(), pos);
    }
    return e;
  }
  ExprP not_expr() {
    Nest nest(*this, cur().pos);
    if (is_name("not")) {
      size_t pos = cur().pos;
      ++ti_;
      auto u = node(Expr::K::Unary, pos);
      u->name = "not";
      u->a.push_back(not_expr());
      return u;
    }
    return compare();
  }
  ExprP compare() {
    ExprP e = math1();
    ExprP chain;
    ExprP left = e;
    while (true) {
      size_t pos = cur().pos;
      std::string op;
      if (cur().k == TokK::Op && (cur().s == "==" || cur().s == "!=" || cur().s == "<" ||
                                  cur().s == "<=" || cur().s == ">" || cur().s == ">=")) {
        op = cur().s;
        ++ti_;
      } else if (is_name("in")) {
        op = "in";
        ++ti_;
      } else if (is_name("not") && peek().k == TokK::Name && peek().s == "in") {
        op = "not in";
        ti_ += 2;
      } else {
        break;
      }
      ExprP right = math1();
      ExprP cmp = binary(op, left, right, pos);
      chain = chain ? binary("and", chain, cmp, pos) : cmp;
      left = right;
    }
    return chain ? chain : e;
  }
  ExprP math1() {
    ExprP e = concat();
    while (is_op("+") || is_op("-")) {
      size_t pos = cur().pos;
      std::string op = (*toks_)[ti_++].s;
      e = binary(op, e, concat(), pos);
    }
    return e;
  }
  ExprP concat() {
    ExprP e = math2();
    while (is_op("~")) {
      size_t pos = cur().pos;
      ++ti_;
      e = binary("~", e, math2(), pos);
    }
    return e;
  }
  ExprP math2() {
    ExprP e = pow_expr();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      size_t pos = cur().pos;
      std::string op = (*toks_)[ti_++].s;
      e = binary(op, e, pow_expr(), pos);
    }
    return e;
  }
  ExprP pow_expr() {
    ExprP e = unary(true);
    while (is_op("**")) {
      size_t pos = cur().pos;
      ++ti_;
      e = binary("**", e, unary(true), pos);
    }
    return e;
  }
  ExprP unary(bool with_filter) {
    Nest nest(*this, cur().pos);
    ExprP e;
    if (is_op("-") || is_op("+")) {
      size_t pos = cur().pos;
      std::string op = (*toks_)[ti_++].s;
      e = node(Expr::K::Unary, pos);
      e->name = op;
      e->a.push_back(unary(false));
    } else {
      e = primary();
    }
    e = postfix(e);
    if (with_filter) e = filter_expr(e);
    return e;
  }

  ExprP primary() {
    const Tok& t = cur();
    size_t pos = t.pos;
    if (t.k == TokK::Name) {
      ++ti_;
      auto e = node(Expr::K::Lit, pos);
      if (t.s == "true" || t.s == "True") e->lit = Value::boolean(true);
      else if (t.s == "false" || t.s == "False") e->lit = Value::boolean(false);
      else if (t.s == "none" || t.s == "None") e->lit = Value::none();
      else {
        e->k = Expr::K::Name;
        e->name = t.s;
      }
      return e;
    }
    if (t.k == TokK::Str) {
      std::string s;
      while (cur().k == TokK::Str) s += (*toks_)[ti_++].s;  // adjacent literals concatenate
      auto e = node(Expr::K::Lit, pos);
      e->lit = Value::str(std::move(s));
      return e;
    }
    if (t.k == TokK::Int || t.k == TokK::Float) {
      ++ti_;
      auto e = node(Expr::K::Lit, pos);
      e->lit = t.k == TokK::Int ? Value::integer(t.i) : Value::number(t.f);
      return e;
    }
    if (is_op("(")) {
      ++ti_;
      if (skip_op(")")) {
        auto e = node(Expr::K::List, pos);
        e->lit = Value::boolean(true);  // ()
        return e;
      }
      ExprP e = tuple_expr();
      expect_op(")");
      return e;
    }
    if (is_op("[")) {
      ++ti_;
      auto e = node(Expr::K::List, pos);
      while (!skip_op("]")) {
        e->a.push_back(expr());
        if (!is_op("]")) expect_op(",");
      }
      return e;
    }
    if (is_op("{")) {
      ++ti_;
      auto e = node(Expr::K::Dict, pos);
      while (!skip_op("}")) {
        e->a.push_back(expr());
        expect_op(":");
        e->a.push_back(expr());
        if (!is_op("}")) expect_op(",");
      }
      return e;
    }
    fail_at(pos, fmt::format("expected an expression, got {}", describe(t)));
  }

  ExprP postfix(ExprP e) {
    while (true) {
      size_t pos = cur().pos;
      if (skip_op(".")) {
        if (cur().k == TokK::Name) {
          auto a = node(Expr::K::Attr, pos);
          a->name = (*toks_)[ti_++].s;
          a->a.push_back(e);
          e = a;
        } else if (cur().k == TokK::Int) {
          auto a = node(Expr::K::Item, pos);
          auto lit = node(Expr::K::Lit, cur().pos);
          lit->lit = Value::integer(cur().i);
          ++ti_;
          a->a = {e, lit};
          e = a;
        } else {
          fail_at(cur().pos, "expected an attribute name after '.'");
        }
      } else if (skip_op("[")) {
        ExprP parts[3];
        bool slice = false;
        for (int k = 0; k < 3; ++k) {
          if (!is_op(":") && !is_op("]")) parts[k] = expr();
          if (k < 2 && skip_op(":")) {
            slice = true;
            continue;
          }
          break;
        }
        expect_op("]");
        if (slice) {
          auto s = node(Expr::K::Slice, pos);
          s->a = {e, parts[0], parts[1], parts[2]};
          e = s;
        } else {
          if (!parts[0]) fail_at(pos, "expected a subscript");
          auto s = node(Expr::K::Item, pos);
          s->a = {e, parts[0]};
          e = s;
        }
      } else if (is_op("(")) {
        e = call(e);
      } else {
        return e;
      }
    }
  }

  // Arguments in parentheses into e->a (after what is already there) and e->kw.
  void call_args(Expr& e) {
    expect_op("(");
    while (!skip_op(")")) {
      if (cur().k == TokK::Name && peek().k == TokK::Op && peek().s == "=") {
        std::string k = (*toks_)[ti_].s;
        ti_ += 2;
        e.kw.push_back({k, expr()});
      } else {
        if (!e.kw.empty()) fail_at(cur().pos, "positional argument after a keyword argument");
        e.a.push_back(expr());
      }
      if (!is_op(")")) expect_op(",");
    }
  }

  ExprP call(ExprP f) {
    auto c = node(Expr::K::Call, f->pos);
    c->a.push_back(f);
    call_args(*c);
    return c;
  }

  ExprP filter_expr(ExprP e) {
    while (true) {
      size_t pos = cur().pos;
      if (skip_op("|")) {
        auto f = node(Expr::K::Filter, pos);
        size_t name_pos = cur().pos;
        f->name = expect_name();
        if (!known(kFilters, f->name)) fail_at(name_pos, fmt::format("unknown filter '{}'", f->name));
        f->a.push_back(e);
        if (is_op("(")) call_args(*f);
        e = f;
      } else if (skip_name("is")) {
        auto t = node(Expr::K::Test, pos);
        t->negated = skip_name("not");
        size_t name_pos = cur().pos;
        t->name = expect_name();
        if (!known(kTests, t->name)) fail_at(name_pos, fmt::format("unknown test '{}'", t->name));
        t->a.push_back(e);
        if (is_op("(")) {
          call_args(*t);
        } else if ((cur().k == TokK::Name || cur().k == TokK::Str || cur().k == TokK::Int ||
                    cur().k == TokK::Float || is_op("(") || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
          if (is_name("is")) fail_at(cur().pos, "cannot chain tests with 'is'");
          t->a.push_back(postfix(primary()));
        }
        e = t;
      } else if (is_op("(")) {
        e = call(e);
      } else {
        return e;
      }
    }
  }
};

}  // namespace

std::shared_ptr<Program> parse_program(std::string_view source, std::string_view label) {
  auto p = std::make_shared<Program>();
  p->label = std::string(label);
  // Jinja normalises newlines and drops one trailing newline (keep_trailing_newline=False).
  std::string src;
  src.reserve(source.size());
  for (size_t j = 0; j < source.size(); ++j) {
    if (source[j] == '\r') {
      src += '\n';
      if (j + 1 < source.size() && source[j + 1] == '\n') ++j;
    } else {
      src += source[j];
    }
  }
  if (!src.empty() && src.back() == '\n') src.pop_back();
  p->source = std::move(src);
  p->line_starts.push_back(0);
  for (size_t j = 0; j < p->source.size(); ++j)
    if (p->source[j] == '\n') p->line_starts.push_back(j + 1);
  Lexer lex(*p);
  Parser parser(*p, lex.run());
  p->body = parser.run();
  return p;
}

}  // namespace rlx::chat
