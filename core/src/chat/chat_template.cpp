// rlx::ChatTemplate: parses / renders Jinja chat templates (chat/jinja.h) and holds the
// built-in templates used when a model carries none.
#include "rlx/chat_template.h"

#include <array>
#include <cstring>
#include <ctime>

#include "jinja.h"
#include "rlx/error.h"

namespace rlx {

namespace {

// Llama 3.1 / 3.2 instruct: a system header with the knowledge cut-off and today's date (the
// system message, trimmed, follows it), then one header + trimmed content + <|eot_id|> per turn;
// tool results go under the "ipython" role as JSON.
constexpr std::string_view kLlama3 = R"JINJA({#- rlx built-in chat template: Llama 3.1 / 3.2 instruct. -#}
{%- set head = namespace(system='', skip=0) %}
{%- if messages and messages[0].role == 'system' %}
    {%- set head.system = messages[0].content | trim %}
    {%- set head.skip = 1 %}
{%- endif %}
{%- set today = date_string if date_string is defined else strftime_now('%d %b %Y') %}
{{- bos_token ~ '<|start_header_id|>system<|end_header_id|>\n\n' }}
{{- 'Cutting Knowledge Date: December 2023\nToday Date: ' ~ today ~ '\n\n' }}
{{- head.system ~ '<|eot_id|>' }}
{%- for m in messages[head.skip:] %}
    {%- if m.role == 'tool' or m.role == 'ipython' %}
        {{- '<|start_header_id|>ipython<|end_header_id|>\n\n' ~ (m.content | tojson) ~ '<|eot_id|>' }}
    {%- else %}
        {{- '<|start_header_id|>' ~ m.role ~ '<|end_header_id|>\n\n' ~ (m.content | trim) ~ '<|eot_id|>' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
)JINJA";

// Qwen3: ChatML turns. Assistant turns before the last user query lose their <think> part;
// those after it keep it (the last one always gets a <think> block). enable_thinking=false
// appends an empty <think> block to the generation prompt.
constexpr std::string_view kQwen3 = R"JINJA({#- rlx built-in chat template: Qwen3. -#}
{%- if messages and messages[0].role == 'system' %}
    {{- '<|im_start|>system\n' ~ messages[0].content ~ '<|im_end|>\n' }}
{%- endif %}
{%- set scan = namespace(query=(messages | length) - 1, searching=true) %}
{%- for m in messages | reverse %}
    {%- if scan.searching and m.role == 'user' and not (m.content.startswith('<tool_response>') and m.content.endswith('</tool_response>')) %}
        {%- set scan.searching = false %}
        {%- set scan.query = (messages | length) - loop.index %}
    {%- endif %}
{%- endfor %}
{%- for m in messages %}
    {%- if m.role == 'user' or (m.role == 'system' and not loop.first) %}
        {{- '<|im_start|>' ~ m.role ~ '\n' ~ m.content ~ '<|im_end|>\n' }}
    {%- elif m.role == 'assistant' %}
        {%- set answer = m.content %}
        {%- set thought = '' %}
        {%- if '</think>' in answer %}
            {%- set thought = (answer.split('</think>')[0].rstrip('\n').split('<think>') | last).lstrip('\n') %}
            {%- set answer = (answer.split('</think>') | last).lstrip('\n') %}
        {%- endif %}
        {%- if loop.index0 > scan.query and (loop.last or thought) %}
            {{- '<|im_start|>assistant\n<think>\n' ~ thought.strip('\n') ~ '\n</think>\n\n' ~ answer.lstrip('\n') }}
        {%- else %}
            {{- '<|im_start|>assistant\n' ~ answer }}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif m.role == 'tool' %}
        {%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' ~ m.content ~ '\n</tool_response>' }}
        {%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}
)JINJA";

struct Builtin {
  std::string_view family, source, bos, eos;
};
constexpr std::array<Builtin, 2> kBuiltins{{
    {"llama3", kLlama3, "<|begin_of_text|>", "<|eot_id|>"},
    {"qwen3", kQwen3, "", "<|im_end|>"},
}};

constexpr std::array<const char*, 12> kMonths{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                              "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

// "26 Jul 2024" -> a tm; false when the text has another shape.
bool parse_date(const std::string& s, std::tm& tm) {
  int day = 0, year = 0;
  char mon[4] = {};
  if (std::sscanf(s.c_str(), "%d %3s %d", &day, mon, &year) != 3) return false;
  for (int m = 0; m < 12; ++m) {
    if (std::strcmp(mon, kMonths[static_cast<size_t>(m)]) == 0) {
      tm = {};
      tm.tm_mday = day;
      tm.tm_mon = m;
      tm.tm_year = year - 1900;
      tm.tm_hour = 12;
      std::tm copy = tm;
      std::time_t t = std::mktime(&copy);  // fills in the weekday and the day of the year
      if (t != static_cast<std::time_t>(-1)) tm = copy;
      return true;
    }
  }
  return false;
}

std::string format_tm(const std::tm& tm, std::string_view fmt) {
  if (fmt.empty()) return {};
  std::string f(fmt);
  std::vector<char> buf(256 + f.size() * 8);
  size_t n = std::strftime(buf.data(), buf.size(), f.c_str(), &tm);
  return std::string(buf.data(), n);
}

}  // namespace

std::string strftime_today(std::string_view fmt) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  return format_tm(tm, fmt);
}

ChatTemplate::ChatTemplate(std::shared_ptr<const chat::Program> p) : prog_(std::move(p)) {}

ChatTemplate ChatTemplate::parse(std::string_view source, std::string_view label) {
  return ChatTemplate(chat::parse_program(source, label));
}

ChatTemplate ChatTemplate::builtin(std::string_view family) {
  for (const auto& b : kBuiltins) {
    if (b.family == family) {
      auto p = chat::parse_program(b.source, fmt::format("builtin:{}", family));
      p->default_bos = std::string(b.bos);
      p->default_eos = std::string(b.eos);
      return ChatTemplate(std::move(p));
    }
  }
  fail("no built-in chat template for '{}' (known: llama3, qwen3)", family);
}

ChatTemplate ChatTemplate::from_model(std::string_view source, std::string_view family,
                                      std::string_view label) {
  if (!source.empty()) return parse(source, label);
  return builtin(family);
}

const std::string& ChatTemplate::source() const { return prog_->source; }
const std::string& ChatTemplate::label() const { return prog_->label; }

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                 const ChatOptions& opts) const {
  using chat::Value;
  chat::List msgs;
  for (const auto& m : messages)
    msgs.push_back(Value::dict({{"role", Value::str(m.role)}, {"content", Value::str(m.content)}}));
  chat::Dict vars{
      {"messages", Value::list(std::move(msgs))},
      {"tools", Value::none()},
      {"documents", Value::none()},
      {"add_generation_prompt", Value::boolean(opts.add_generation_prompt)},
  };
  // Like HF's special_tokens_map: a token the tokenizer lacks is not defined at all.
  std::string bos = opts.bos_token.empty() ? prog_->default_bos : opts.bos_token;
  std::string eos = opts.eos_token.empty() ? prog_->default_eos : opts.eos_token;
  if (!bos.empty()) vars.emplace_back("bos_token", Value::str(bos));
  if (!eos.empty()) vars.emplace_back("eos_token", Value::str(eos));
  if (opts.enable_thinking) vars.emplace_back("enable_thinking", Value::boolean(*opts.enable_thinking));
  if (!opts.date_string.empty()) vars.emplace_back("date_string", Value::str(opts.date_string));
  std::string date = opts.date_string;
  vars.emplace_back("strftime_now", Value::func([date](chat::Interp& in, chat::Args& a) {
    Value f = a.get(0, "format", Value());
    if (!f.is_str()) chat::fail_call(in, "strftime_now() needs a format string");
    if (date.empty()) return Value::str(strftime_today(f.s));
    std::tm tm{};
    if (!parse_date(date, tm)) return Value::str(date);  // not "DD Mon YYYY": given as is
    return Value::str(format_tm(tm, f.s));
  }));
  return chat::render_program(*prog_, vars);
}

}  // namespace rlx
