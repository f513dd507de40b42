// `rlx chat`: an interactive multi-turn conversation. Each line on stdin is a user turn; the
// reply streams as text and ends at the model's end-of-turn / end-of-text token. The whole
// conversation is rendered with the model's chat template every turn, and the generator keeps
// the KV cache of the part that did not change (continue_get_last_logits), so a turn costs only
// its new tokens. Lines starting with '/' are commands: /reset, /exit.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "interrupt.h"
#include "rlx/error.h"
#include "rlx/log.h"
#include "rlx/session.h"
#include "text.h"

namespace rlx::cli {

int cmd_chat(int argc, char** argv) {
  cxxopts::Options opts("rlx chat", "Talk to a model: one user turn per line on stdin.");
  add_common_flags(opts);
  auto add = opts.add_options();
  add("weights", "a .gguf file or a Hugging Face model directory", cxxopts::value<std::string>(),
      "PATH");
  add("device", "NAME or NAME:INDEX", cxxopts::value<std::string>()->default_value("cpu"));
  add("system", "the system prompt", cxxopts::value<std::string>(), "TEXT");
  add("tokenizer", "a tokenizer.json to use instead of the model's own",
      cxxopts::value<std::string>(), "PATH");
  add("max-tokens", "tokens per reply at most", cxxopts::value<int>()->default_value("1024"));
  add("no-think", "Qwen3: answer without a thinking block (enable_thinking = false)");
  add("date", "today's date for templates that print it (Llama 3.2), e.g. \"26 Jul 2024\"",
      cxxopts::value<std::string>(), "TEXT");
  for (const ProfileFlag& f : kProfileFlags)
    add(f.flag, std::string(f.help) + " [" + f.key + "]", cxxopts::value<std::string>());
  add("profile", "the rlx.toml to use (default: found next to the weights, then configs/)",
      cxxopts::value<std::string>(), "PATH");
  cxxopts::ParseResult r;
  if (!parse_flags(opts, argc, argv, r)) return 0;
  PluginHost host(apply_common_flags(r));
  if (!r.count("weights")) fail("rlx chat: --weights is required (a .gguf file or an HF directory)");
  const int max_tokens = r["max-tokens"].as<int>();
  if (max_tokens <= 0) fail("--max-tokens must be > 0");

  SessionOptions so;
  so.device = r["device"].as<std::string>();
  if (r.count("profile")) so.profile = r["profile"].as<std::string>();
  so.configs_dir = installed_configs_dir();
  for (const ProfileFlag& f : kProfileFlags)
    if (r.count(f.flag))
      so.overrides.push_back({f.key, r[f.flag].as<std::string>(), std::string("--") + f.flag});
  const std::string weights = r["weights"].as<std::string>();
  Session s = Session::open(host, weights, so);
  const Tokenizer tok = load_tokenizer(
      weights, &s.model->file(), r.count("tokenizer") ? r["tokenizer"].as<std::string>() : "");
  std::string template_source;
  const ChatTemplate tmpl =
      load_chat_template(weights, s.model->file(), s.model->family(), &template_source);
  log().info("chat template: {}", template_source);

  ChatOptions co;
  co.add_generation_prompt = true;
  if (r.count("no-think")) co.enable_thinking = false;
  if (r.count("date")) co.date_string = r["date"].as<std::string>();
  if (tok.bos_id() >= 0) co.bos_token = tok.token_bytes(tok.bos_id());
  if (tok.eos_id() >= 0) co.eos_token = tok.token_bytes(tok.eos_id());

  std::vector<ChatMessage> messages;
  if (r.count("system")) messages.push_back({"system", r["system"].as<std::string>()});
  const size_t n_fixed = messages.size();
  const bool interactive = isatty(STDIN_FILENO);
  const auto& stops = tok.stop_ids();
  std::string line;
  // Ctrl-C during a reply ends the reply (the turn keeps what was generated); at the "> " prompt
  // it ends the chat.
  StopOnInterrupt interrupt;
  for (;;) {
    if (interactive) std::fputs("> ", stderr);
    interrupt.rearm();
    if (!std::getline(std::cin, line) || interrupt.requested() || line == "/exit" ||
        line == "/quit")
      break;
    if (line == "/reset") {
      messages.resize(n_fixed);
      continue;
    }
    if (line.empty()) continue;
    messages.push_back({"user", line});
    const std::vector<int32_t> ids = tok.encode(tmpl.render(messages, co));
    const int64_t max_seq = s.generator->max_seq();
    if (static_cast<int64_t>(ids.size()) >= max_seq) {
      log().error("the conversation is {} tokens, more than the KV cache holds ({} rows, "
                  "--max-seq / memory.max_seq): /reset to start over, or run again with a larger "
                  "--max-seq",
                  ids.size(), max_seq);
      messages.pop_back();
      continue;
    }

    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    s.generator->continue_get_last_logits(ids);
    const auto t1 = Clock::now();
    TokenDecoder out(tok, /*skip_special=*/true);
    std::string reply;
    int generated = 0;
    bool context_full = false;
    for (int i = 0; i < max_tokens && !interrupt.requested(); ++i) {
      if ((context_full = s.generator->context_full())) break;
      const int32_t id = s.generator->step_cached(s.sampling);
      ++generated;
      if (std::find(stops.begin(), stops.end(), id) != stops.end()) break;
      const std::string piece = out.push(id);
      reply += piece;
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
    const std::string rest = out.flush();
    reply += rest;
    std::fwrite(rest.data(), 1, rest.size(), stdout);
    std::fputs("\n", stdout);
    std::fflush(stdout);
    const double prompt_s = std::chrono::duration<double>(t1 - t0).count();
    const double gen_s = std::chrono::duration<double>(Clock::now() - t1).count();
    log().info("turn: {} prompt tokens in {:.1f} ms, {} generated in {:.1f} ms ({:.1f} t/s)",
               ids.size(), prompt_s * 1e3, generated, gen_s * 1e3,
               generated / std::max(gen_s, 1e-9));
    if (context_full)
      log().warn("the reply stopped: the context is full ({} rows, --max-seq / "
                 "memory.max_seq); /reset to start over",
                 max_seq);
    messages.push_back({"assistant", reply});
  }
  return 0;
}

}  // namespace rlx::cli
