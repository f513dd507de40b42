// Chat templates: a conversation (role + content turns) rendered to the prompt text a model was
// trained on, the way Hugging Face's apply_chat_template does it.
//
//   auto t = rlx::ChatTemplate::parse(model_template_string, "model.gguf:chat_template");
//   auto t = rlx::ChatTemplate::builtin("qwen3");          // or "llama3" (the Llama 3.2 header)
//   std::string prompt = t.render({{"system", "You are helpful."}, {"user", "Hi"}}, {});
//
// Templates are Jinja2 sources (tokenizer_config.json's "chat_template", GGUF's
// tokenizer.chat_template), run by a small interpreter of the subset chat templates use, with
// the environment HF uses: trim_blocks and lstrip_blocks on, loop controls (break / continue),
// the globals raise_exception(msg) and strftime_now(fmt), and a tojson filter that keeps
// non-ASCII text as is. The render context holds: messages (dicts with role and content),
// tools = none, add_generation_prompt, bos_token, eos_token, enable_thinking (only when set)
// and date_string (only when set).
//
// Errors: a syntax error throws rlx::Error "label:line:col: what"; raise_exception(...) and
// runtime errors (calling an unknown function, 1 / 0, ...) throw rlx::Error naming the
// template line the same way.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlx {

struct ChatMessage {
  std::string role, content;
};

struct ChatOptions {
  bool add_generation_prompt = true;
  std::optional<bool> enable_thinking;  // Qwen3; unset = the template's default (thinking on)
  std::string date_string;  // "26 Jul 2024"; empty = today (what strftime_now gives)
  std::string bos_token, eos_token;  // exposed to the template as bos_token / eos_token
};

namespace chat {
struct Program;
}

class ChatTemplate {
 public:
  // Parses a Jinja template; throws rlx::Error "label:line:col: what" on a syntax error.
  static ChatTemplate parse(std::string_view source, std::string_view label);
  // A built-in template: "llama3" (Llama 3.1/3.2 instruct, with the "Cutting Knowledge Date /
  // Today Date" system header) or "qwen3" (ChatML with <think> handling). Throws for others.
  static ChatTemplate builtin(std::string_view family);
  // The model's own template when it has one (non-empty source), the family's built-in one
  // otherwise.
  static ChatTemplate from_model(std::string_view source, std::string_view family,
                                 std::string_view label);

  std::string render(const std::vector<ChatMessage>& messages, const ChatOptions& opts) const;

  const std::string& source() const;
  const std::string& label() const;

 private:
  explicit ChatTemplate(std::shared_ptr<const chat::Program> p);
  std::shared_ptr<const chat::Program> prog_;
};

// Today's date formatted like Python's time.strftime(fmt) in local time.
std::string strftime_today(std::string_view fmt);

}  // namespace rlx
