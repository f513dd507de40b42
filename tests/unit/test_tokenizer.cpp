// Byte-level BPE tokenizer: synthetic tokenizer.json and GGUF files (no network), checking the
// byte alphabet, merges by rank, ignore_merges, added tokens, the Llama 3 / Qwen2 / GPT-2
// pre-tokenizer regexes (digits, contractions, Unicode whitespace), NFC, lossy UTF-8 decoding,
// streaming decode, and the errors for broken or unsupported files.
//
// The hidden [.bench] test measures encode speed on a real tokenizer.json:
//   RLX_TOKENIZER_JSON=tokenizer.json RLX_BENCH_TEXT=prose.txt rlx-unit-tests "[.bench]"
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "file_util.h"
#include "rlx/error.h"
#include "rlx/tokenizer.h"
#include "rlx/weights.h"

using Catch::Contains;
using nlohmann::json;
using Ids = std::vector<int32_t>;
using Strings = std::vector<std::string>;

namespace {

const char* const kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The GPT-2 byte alphabet, written independently of the library's table.
std::string alpha(const std::string& bytes) {
  std::string out;
  for (unsigned char b : bytes) {
    unsigned cp = b;
    bool self = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    if (!self) {
      unsigned n = 0;
      for (unsigned c = 0; c < b; ++c)
        if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174)) ++n;
      cp = 256 + n;
    }
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

// A tokenizer.json: ids 0..255 are the single bytes (id == byte value), then `extra` tokens
// and merged tokens, then added tokens at 1000+.
struct TinyJson {
  std::vector<std::string> tokens;  // raw bytes by id
  std::vector<std::pair<std::string, std::string>> merges;
  json added = json::array();
  bool merges_as_arrays = false;
  bool ignore_merges = false;
  std::string regex = kLlama3;
  json normalizer = nullptr;
  json post_processor = nullptr;

  TinyJson() {
    for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
  }
  int32_t id(const std::string& bytes) {
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] == bytes) return static_cast<int32_t>(i);
    tokens.push_back(bytes);
    return static_cast<int32_t>(tokens.size() - 1);
  }
  int32_t merge(const std::string& a, const std::string& b) {
    merges.emplace_back(a, b);
    return id(a + b);
  }
  // Merges that build `w` left to right; returns its id.
  int32_t word(const std::string& w) {
    std::string cur(1, w[0]);
    for (size_t i = 1; i < w.size(); ++i) {
      merge(cur, std::string(1, w[i]));
      cur += w[i];
    }
    return id(cur);
  }
  void add(int32_t id, const std::string& content, bool special) {
    added.push_back({{"id", id},
                     {"content", content},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", special}});
  }
  void bos(int32_t id, const std::string& name) {
    post_processor = {
        {"type", "TemplateProcessing"},
        {"single",
         {{{"SpecialToken", {{"id", name}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"special_tokens", {{name, {{"id", name}, {"ids", {id}}, {"tokens", {name}}}}}}};
  }
  json doc() const {
    json vocab = json::object();
    for (size_t i = 0; i < tokens.size(); ++i) vocab[alpha(tokens[i])] = i;
    json m = json::array();
    for (const auto& [a, b] : merges) {
      if (merges_as_arrays)
        m.push_back({alpha(a), alpha(b)});
      else
        m.push_back(alpha(a) + " " + alpha(b));
    }
    return {{"version", "1.0"},
            {"added_tokens", added},
            {"normalizer", normalizer},
            {"pre_tokenizer",
             {{"type", "Sequence"},
              {"pretokenizers",
               {{{"type", "Split"},
                 {"pattern", {{"Regex", regex}}},
                 {"behavior", "Isolated"},
                 {"invert", false}},
                {{"type", "ByteLevel"},
                 {"add_prefix_space", false},
                 {"trim_offsets", true},
                 {"use_regex", false}}}}}},
            {"post_processor", post_processor},
            {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}}},
            {"model",
             {{"type", "BPE"}, {"ignore_merges", ignore_merges}, {"vocab", vocab}, {"merges", m}}}};
  }
  rlx::Tokenizer build() const {
    return rlx::Tokenizer::from_hf_json_text(doc().dump(), "tiny.json");
  }
};

Strings pieces_of(const rlx::Tokenizer& tok, const Ids& ids) {
  Strings out;
  for (int32_t id : ids) out.push_back(tok.token_bytes(id));
  return out;
}

// The pre-tokenizer's pieces, made visible: with ignore_merges, a piece that is in the vocab
// comes out as one token, and any other split falls apart into single bytes.
Strings split(const std::string& regex, const std::string& text, const Strings& expected,
              json normalizer = nullptr) {
  TinyJson t;
  t.regex = regex;
  t.ignore_merges = true;
  t.normalizer = std::move(normalizer);
  for (const std::string& p : expected) t.id(p);
  rlx::Tokenizer tok = t.build();
  return pieces_of(tok, tok.encode(text));
}

std::string error_of(const json& doc) {
  try {
    rlx::Tokenizer::from_hf_json_text(doc.dump(), "bad.json");
  } catch (const rlx::Error& e) {
    return e.what();
  }
  FAIL("loaded without an error");
  return "";
}

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s += static_cast<char>(c);
  return s;
}

Ids byte_ids(const std::string& s) {
  Ids ids;
  for (unsigned char c : s) ids.push_back(c);
  return ids;
}

const std::string kFffd = "\xEF\xBF\xBD";

}  // namespace

TEST_CASE("tokenizer: the GPT-2 byte alphabet maps every byte both ways", "[tokenizer]") {
  rlx::Tokenizer tok = TinyJson().build();
  REQUIRE(tok.vocab_size() == 256);
  for (int b = 0; b < 256; ++b) {
    INFO("byte " << b);
    REQUIRE(tok.token_bytes(b) == std::string(1, static_cast<char>(b)));
    // A lone byte (valid ASCII or not) encodes to its own token and back.
    REQUIRE(tok.encode(std::string(1, static_cast<char>(b))) == Ids{b});
  }
  CHECK(alpha(" ") == "\xC4\xA0");   // 'Ġ'
  CHECK(alpha("\n") == "\xC4\x8A");  // 'Ċ'
  CHECK_THROWS_WITH(tok.token_bytes(256), Contains("tiny.json") && Contains("256"));
  CHECK(tok.pre() == "llama-bpe");
}

TEST_CASE("tokenizer: merges apply by rank, leftmost first", "[tokenizer]") {
  for (bool arrays : {false, true}) {
    INFO("merges as " << (arrays ? "[a, b] arrays" : "\"a b\" strings"));
    TinyJson t;
    t.merges_as_arrays = arrays;
    int32_t ab = t.merge("a", "b"), bc = t.merge("b", "c");
    int32_t aa = t.merge("a", "a");
    int32_t hello = t.word("hello");
    rlx::Tokenizer tok = t.build();
    CHECK(tok.encode("abc") == Ids{ab, 'c'});
    CHECK(tok.encode("aaa") == Ids{aa, 'a'});
    CHECK(tok.encode("aaaa") == Ids{aa, aa});
    CHECK(tok.encode("hello") == Ids{hello});
    CHECK(tok.decode(tok.encode("hello abc")) == "hello abc");

    TinyJson r;  // the same merges, "b c" ranked first
    r.merges_as_arrays = arrays;
    r.merge("b", "c");
    r.merge("a", "b");
    rlx::Tokenizer rev = r.build();
    CHECK(rev.encode("abc") == Ids{'a', r.id("bc")});
    (void)bc;
  }
}

TEST_CASE("tokenizer: a long piece merges in rank order", "[tokenizer]") {
  TinyJson t;
  int32_t aa = t.merge("a", "a");
  int32_t a4 = t.merge("aa", "aa");
  rlx::Tokenizer tok = t.build();
  std::string text(10001, 'a');  // one piece: the heap path, 2500 x "aaaa" + "a"
  Ids ids = tok.encode(text);
  REQUIRE(ids.size() == 2501);
  CHECK(ids.front() == a4);
  CHECK(ids.back() == 'a');
  CHECK(tok.encode("aaaaaa") == Ids{a4, aa});
}

TEST_CASE("tokenizer: ignore_merges emits a piece that is in the vocab whole", "[tokenizer]") {
  TinyJson t;
  int32_t ab = t.merge("a", "b");
  int32_t abc = t.id("abc");  // in the vocab, but no merge makes it
  rlx::Tokenizer plain = t.build();
  CHECK(plain.encode("abc") == Ids{ab, 'c'});
  t.ignore_merges = true;
  rlx::Tokenizer ignoring = t.build();
  CHECK(ignoring.encode("abc") == Ids{abc});
  CHECK(ignoring.encode("abcab") == Ids{ab, 'c', ab});  // not in the vocab: merged as usual
}

TEST_CASE("tokenizer: added tokens are matched in the raw text", "[tokenizer]") {
  TinyJson t;
  int32_t hi = t.word("hi");
  t.add(1000, "<|eot|>", true);
  t.add(1001, "<|eot|>!", true);  // longer: wins where both match
  t.add(1002, "<think>", false);  // added but not special
  t.bos(1003, "<|bos|>");
  t.add(1003, "<|bos|>", true);
  rlx::Tokenizer tok = t.build();
  REQUIRE(tok.vocab_size() == 1004);

  CHECK(tok.encode("hi<|eot|>") == Ids{hi, 1000});
  CHECK(tok.encode("<|eot|>!hi") == Ids{1001, hi});
  CHECK(tok.encode("<think>hi</think>") == Ids{1002, hi, '<', '/', 't', hi, 'n', 'k', '>'});
  CHECK(tok.encode("hi", {.add_bos = true}) == Ids{1003, hi});
  CHECK(tok.bos_id() == 1003);

  // parse_special = false: special tokens are plain text; non-special added ones still match.
  Ids plain = tok.encode("<|eot|><think>", {.parse_special = false});
  CHECK(plain == Ids{'<', '|', 'e', 'o', 't', '|', '>', 1002});
  CHECK(tok.decode(plain) == "<|eot|><think>");

  CHECK(tok.is_special(1000));
  CHECK_FALSE(tok.is_special(1002));
  CHECK_FALSE(tok.is_special(hi));
  CHECK(tok.token_bytes(1000) == "<|eot|>");
  Ids ids{1003, hi, 1002, 1000};
  CHECK(tok.decode(ids) == "<|bos|>hi<think><|eot|>");
  CHECK(tok.decode(ids, true) == "hi<think>");
}

TEST_CASE("tokenizer: eos and stop ids", "[tokenizer]") {
  TinyJson t;
  t.add(300, "<|end_of_text|>", true);
  t.add(301, "<|eot_id|>", true);
  t.add(302, "<|im_end|>", true);
  rlx::Tokenizer tok = t.build();
  CHECK(tok.eos_id() == 300);
  CHECK(tok.stop_ids() == Ids{300, 301, 302});
  CHECK(tok.bos_id() == -1);
  CHECK(tok.encode("a", {.add_bos = true}) == Ids{'a'});  // no BOS: nothing is added
}

TEST_CASE("tokenizer: digits split by 3 (Llama 3), by 1 (Qwen2), runs (GPT-2)", "[tokenizer]") {
  CHECK(split(kLlama3, "12345 678", {"123", "45", " ", "678"}) == Strings{"123", "45", " ", "678"});
  CHECK(split(kQwen2, "12345", {}) == Strings{"1", "2", "3", "4", "5"});
}

TEST_CASE("tokenizer: contractions are case-insensitive in Llama 3, not in GPT-2", "[tokenizer]") {
  Strings want{"I", "'M", " they", "'RE", " we", "'ll"};
  CHECK(split(kLlama3, "I'M they'RE we'll", want) == want);
  // GPT-2's regex: "'M" is not a contraction, so the quote and the letter part ways.
  TinyJson t;
  t.id("'M");
  t.id(" they");
  t.ignore_merges = true;
  json doc = t.doc();
  doc["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  rlx::Tokenizer gpt2 = rlx::Tokenizer::from_hf_json_text(doc.dump(), "gpt2.json");
  CHECK(gpt2.pre() == "default");
  CHECK(pieces_of(gpt2, gpt2.encode("I'M they")) == Strings{"I", "'", "M", " they"});
}

TEST_CASE("tokenizer: whitespace runs and Unicode whitespace", "[tokenizer]") {
  Strings want{"hi", "  \n\n", " ", " there"};
  CHECK(split(kLlama3, "hi  \n\n  there", want) == want);
  want = {"a", "  ", " b"};
  CHECK(split(kLlama3, "a   b", want) == want);
  want = {"foo", "!!\n\n", "bar"};
  CHECK(split(kLlama3, "foo!!\n\nbar", want) == want);
  // U+3000, U+0085, U+00A0, U+2028 are White_Space: "\s+(?!\S)" takes the first of two.
  for (std::string ws : {"\u3000", "\u0085", "\u00A0", "\u2028"}) {
    INFO("whitespace " << ws);
    want = {"a", ws, ws + "b"};
    CHECK(split(kLlama3, "a" + ws + ws + "b", want) == want);
  }
  // U+FEFF and U+180E are not (format characters): they are "other" symbols.
  for (std::string ws : {"\uFEFF", "\u180E"}) {
    INFO("not whitespace " << ws);
    want = {"a", ws + ws, "b"};
    CHECK(split(kLlama3, "a" + ws + ws + "b", want) == want);
  }
}

TEST_CASE("tokenizer: NFC normalizes before BPE (Qwen)", "[tokenizer]") {
  const std::string decomposed = "e\u0301", composed = "\u00E9";
  json nfc = {{"type", "NFC"}};
  CHECK(split(kQwen2, "caf" + decomposed, {"caf" + composed}, nfc) == Strings{"caf" + composed});
  json seq = {{"type", "Sequence"}, {"normalizers", {nfc}}};
  CHECK(split(kQwen2, "caf" + decomposed, {"caf" + composed}, seq) == Strings{"caf" + composed});
  // Without a normalizer the combining accent is a piece of its own.
  CHECK(split(kQwen2, "caf" + decomposed, {"cafe", "\u0301"}) == Strings{"cafe", "\u0301"});

  TinyJson t;
  t.regex = kQwen2;
  t.normalizer = nfc;
  rlx::Tokenizer tok = t.build();
  CHECK(tok.decode(tok.encode("e\u0301 \u212B")) == "\u00E9 \u00C5");  // Angstrom sign -> Å
  CHECK(tok.decode(tok.encode(std::string("a\0b", 3))) == std::string("a\0b", 3));
}

TEST_CASE("tokenizer: invalid UTF-8 in the input still round-trips its bytes", "[tokenizer]") {
  rlx::Tokenizer tok = TinyJson().build();
  std::string text =
      "ab\xFF"
      "cd\xE2\x82";
  Ids ids = tok.encode(text);
  std::string joined;
  for (int32_t id : ids) joined += tok.token_bytes(id);
  CHECK(joined == text);
  CHECK(tok.decode(ids) == "ab" + kFffd + "cd" + kFffd);
}

TEST_CASE("tokenizer: decode replaces each maximal invalid subsequence with U+FFFD",
          "[tokenizer]") {
  rlx::Tokenizer tok = TinyJson().build();
  auto dec = [&](const std::string& s) { return tok.decode(byte_ids(s)); };
  CHECK(dec("\xFF") == kFffd);
  CHECK(dec("a\xE2\x82"
            "b") == "a" + kFffd + "b");  // truncated 3-byte sequence: one
  CHECK(dec("\xE2\x82") == kFffd);
  CHECK(dec("\xC0\xAF") == kFffd + kFffd);                          // overlong '/': C0 and AF each
  CHECK(dec("\xE0\x80\xAF") == kFffd + kFffd + kFffd);              // overlong 3-byte
  CHECK(dec("\xED\xA0\x80") == kFffd + kFffd + kFffd);              // a surrogate
  CHECK(dec("\xF4\x90\x80\x80") == kFffd + kFffd + kFffd + kFffd);  // above U+10FFFF
  CHECK(dec("\xF0\x9F\x98") == kFffd);                              // truncated emoji
  CHECK(dec("\xF0\x9F\x98\x80") == "\xF0\x9F\x98\x80");             // U+1F600
  CHECK(dec("\x80\x80") == kFffd + kFffd);
  CHECK_THROWS_AS(tok.decode(Ids{-1}), rlx::Error);
}

TEST_CASE("tokenizer: TokenDecoder holds back a character split across tokens", "[tokenizer]") {
  rlx::Tokenizer tok = TinyJson().build();
  rlx::TokenDecoder d(tok);
  CHECK(d.push('a') == "a");
  CHECK(d.push(0xF0) == "");
  CHECK(d.push(0x9F) == "");
  CHECK(d.push(0x98) == "");
  CHECK(d.push(0x80) == "\xF0\x9F\x98\x80");
  // A byte that cannot continue the held-back sequence flushes U+FFFD for it.
  CHECK(d.push(0xE2) == "");
  CHECK(d.push('b') == kFffd + "b");
  CHECK(d.push(0xE2) == "");
  CHECK(d.push(0x82) == "");
  CHECK(d.flush() == kFffd);
  CHECK(d.flush() == "");

  TinyJson t;
  t.add(500, "<|eot|>", true);
  rlx::Tokenizer special = t.build();
  rlx::TokenDecoder skip(special, true);
  CHECK(skip.push('x') == "x");
  CHECK(skip.push(500) == "");
  rlx::TokenDecoder keep(special);
  CHECK(keep.push(500) == "<|eot|>");
}

TEST_CASE("tokenizer: a bad or unsupported tokenizer.json names the key", "[tokenizer]") {
  json doc = TinyJson().doc();
  json no_vocab = doc;
  no_vocab["model"].erase("vocab");
  CHECK_THAT(error_of(no_vocab), Contains("bad.json") && Contains("model.vocab"));

  json bad_merge = doc;
  bad_merge["model"]["merges"] = {"a zz"};
  CHECK_THAT(error_of(bad_merge), Contains("model.merges[0]") && Contains("zz"));

  json wordpiece = doc;
  wordpiece["model"]["type"] = "WordPiece";
  CHECK_THAT(error_of(wordpiece), Contains("WordPiece"));

  json nfkc = doc;
  nfkc["normalizer"] = {{"type", "NFKC"}};
  CHECK_THAT(error_of(nfkc), Contains("normalizer.type") && Contains("NFKC"));

  json digits = doc;
  digits["pre_tokenizer"]["pretokenizers"][0] = {{"type", "Digits"}};
  CHECK_THAT(error_of(digits),
             Contains("pre_tokenizer.pretokenizers[0].type") && Contains("Digits"));

  json decoder = doc;
  decoder["decoder"] = {{"type", "WordPiece"}};
  CHECK_THAT(error_of(decoder), Contains("decoder.type") && Contains("WordPiece"));

  json bad_regex = doc;
  bad_regex["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  CHECK_THAT(error_of(bad_regex), Contains("regex") && Contains("(unclosed"));

  json bad_added = doc;
  bad_added["added_tokens"] = {{{"id", 5}}};
  CHECK_THAT(error_of(bad_added), Contains("added_tokens[0].content"));

  CHECK_THROWS_WITH(rlx::Tokenizer::from_hf_json_text("{not json", "broken.json"),
                    Contains("broken.json") && Contains("not valid JSON"));
  CHECK_THROWS_WITH(rlx::Tokenizer::from_hf_json("/nonexistent/tokenizer.json"),
                    Contains("/nonexistent/tokenizer.json"));
}

namespace {

// A GGUF with tokenizer.ggml.* metadata: the 256 byte tokens, "he", "hel", "hello" by merges,
// "xyz" in the vocab without a merge, and two added tokens.
void write_tokenizer_gguf(const std::filesystem::path& p, const std::string& model,
                          const std::string& pre) {
  std::vector<rlx::MetaValue> tokens, types, merges;
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(rlx::MetaValue::string(alpha(std::string(1, static_cast<char>(b)))));
    types.push_back(rlx::MetaValue::i32(1));
  }
  for (const char* t :
       {"he", "hel", "hell", "hello", "xyz", "<|begin_of_text|>", "<|eot_id|>", "<tool>"}) {
    tokens.push_back(rlx::MetaValue::string(t[0] == '<' ? std::string(t) : alpha(t)));
    types.push_back(rlx::MetaValue::i32(t[0] == '<' ? (t[1] == '|' ? 3 : 4) : 1));
  }
  for (const char* m : {"h e", "he l", "hel l", "hell o"})
    merges.push_back(rlx::MetaValue::string(m));
  rlx::GgufWriter w;
  w.set("general.architecture", rlx::MetaValue::string("llama"));
  w.set("tokenizer.ggml.model", rlx::MetaValue::string(model));
  w.set("tokenizer.ggml.pre", rlx::MetaValue::string(pre));
  w.set("tokenizer.ggml.tokens", rlx::MetaValue::array(rlx::MetaType::String, tokens));
  w.set("tokenizer.ggml.token_type", rlx::MetaValue::array(rlx::MetaType::I32, types));
  w.set("tokenizer.ggml.merges", rlx::MetaValue::array(rlx::MetaType::String, merges));
  w.set("tokenizer.ggml.bos_token_id", rlx::MetaValue::u32(261));
  w.set("tokenizer.ggml.eos_token_id", rlx::MetaValue::u32(262));
  w.write(p);
}

}  // namespace

TEST_CASE("tokenizer: GGUF tokenizer metadata (llama-bpe, qwen2)", "[tokenizer]") {
  rlx::test::TempDir dir("rlx-tok");
  auto path = dir.path / "tok.gguf";
  write_tokenizer_gguf(path, "gpt2", "llama-bpe");
  auto f = rlx::WeightFile::open(path);
  rlx::Tokenizer tok = rlx::Tokenizer::from_gguf(*f);
  CHECK(tok.vocab_size() == 264);
  CHECK(tok.pre() == "llama-bpe");
  CHECK(tok.bos_id() == 261);  // llama-bpe adds BOS by default, as in llama.cpp
  CHECK(tok.eos_id() == 262);
  CHECK(tok.stop_ids() == Ids{262});
  CHECK(tok.is_special(261));
  CHECK_FALSE(tok.is_special(263));
  CHECK(tok.encode("hello", {.add_bos = true}) == Ids{261, 259});
  CHECK(tok.encode("xyz") == Ids{260});  // llama-bpe implies ignore_merges
  CHECK(tok.encode("hi<|eot_id|><tool>") == Ids{'h', 'i', 262, 263});
  CHECK(tok.encode("<|eot_id|><tool>", {.parse_special = false}).size() == 11);
  CHECK(tok.decode(Ids{261, 256, 262}, true) == "he");
  CHECK(tok.decode(Ids{261, 256, 262}) == "<|begin_of_text|>he<|eot_id|>");

  write_tokenizer_gguf(path, "gpt2", "qwen2");
  f = rlx::WeightFile::open(path);
  rlx::Tokenizer qwen = rlx::Tokenizer::from_gguf(*f);
  CHECK(qwen.pre() == "qwen2");
  CHECK(qwen.bos_id() == -1);  // no add_bos_token: qwen2 adds none
  CHECK(qwen.encode("xyz") == Ids{'x', 'y', 'z'});
  CHECK(qwen.decode(qwen.encode("e\u0301")) == "\u00E9");  // NFC

  write_tokenizer_gguf(path, "llama", "default");
  f = rlx::WeightFile::open(path);
  CHECK_THROWS_WITH(rlx::Tokenizer::from_gguf(*f),
                    Contains("tok.gguf") && Contains("\"llama\"") && Contains("byte-level BPE"));

  write_tokenizer_gguf(path, "gpt2", "falcon");
  f = rlx::WeightFile::open(path);
  CHECK_THROWS_WITH(rlx::Tokenizer::from_gguf(*f),
                    Contains("tokenizer.ggml.pre") && Contains("falcon"));
}

TEST_CASE("tokenizer: encode speed on a real tokenizer.json", "[.bench]") {
  const char* json_path = std::getenv("RLX_TOKENIZER_JSON");
  const char* text_path = std::getenv("RLX_BENCH_TEXT");
  if (!json_path || !text_path) {
    WARN("set RLX_TOKENIZER_JSON and RLX_BENCH_TEXT to run the benchmark");
    return;
  }
  rlx::Tokenizer tok = rlx::Tokenizer::from_hf_json(json_path);
  std::ifstream in(text_path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(!text.empty());
  auto t0 = std::chrono::steady_clock::now();
  size_t bytes = 0, tokens = 0;
  do {
    tokens += tok.encode(text).size();
    bytes += text.size();
  } while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN("encode: " << bytes / s / 1e6 << " MB/s, " << tokens / s / 1e6 << " Mtok/s");
}
