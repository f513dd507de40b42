#!/usr/bin/env node
// Expected token ids for tests/tokenizer/cases.jsonl, computed with an implementation that shares
// no code with rlx: @huggingface/tokenizers (tokenizers.js, the JS port behind transformers.js),
// installed by fetch.sh into the cache, never into the source tree.
//
//   node oracle.mjs --modules CACHE/node_modules --tokenizer T.json [--config C.json]
//                   --cases cases.jsonl [--out expected.jsonl] [--decode-out decode.jsonl]
//
// --decode-out: 300 seeded random id sequences (whole vocab, single-byte tokens that leave
// UTF-8 sequences cut or invalid, special tokens) with the oracle's decode of each:
//   {"id", "ids", "text", "text_skip_special"}   (clean_up_tokenization_spaces off, as rlx)
//
// One output line per case, in input order:
//   {"id", "ids", "ids_add_special", "ids_split_special"}
//   ids               encode(text, {add_special_tokens: false}); added-token strings in the text
//                     are matched as tokens (rlx tokenize default)
//   ids_add_special   encode(text, {add_special_tokens: true}): the post-processor's template,
//                     i.e. BOS 128000 first for Llama 3, nothing for Qwen3 (rlx --add-bos)
//   ids_split_special special tokens (added tokens with "special": true) as plain text, no BOS
//                     (rlx --no-special). Non-special added tokens (Qwen3 <think>, <tool_call>, ...)
//                     are still matched, as in the Rust `tokenizers` crate's
//                     encode_special_tokens / transformers' split_special_tokens=True and in
//                     llama.cpp's parse_special=false. tokenizers.js has no such option, so this is
//                     a second Tokenizer built from the same JSON with the special entries removed
//                     from added_tokens (the BPE vocab never contains them in these two files;
//                     checked below).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

function parseArgs(argv) {
  const a = {};
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (!k.startsWith("--")) throw new Error(`unexpected argument ${k}`);
    a[k.slice(2)] = argv[++i];
  }
  for (const k of ["modules", "tokenizer", "cases"]) {
    if (!a[k]) throw new Error(`missing --${k}`);
  }
  return a;
}

const args = parseArgs(process.argv.slice(2));
const req = createRequire(path.join(path.resolve(args.modules), "..", "package.json"));
// The package's "require" export (dist/tokenizers.cjs); the cache has no "type": "module".
const { Tokenizer } = req("@huggingface/tokenizers");
const oracleVersion = JSON.parse(
  fs.readFileSync(path.join(path.resolve(args.modules), "@huggingface/tokenizers/package.json"), "utf8"),
).version;

const tokJson = JSON.parse(fs.readFileSync(args.tokenizer, "utf8"));
const config = args.config ? JSON.parse(fs.readFileSync(args.config, "utf8")) : {};

// The split-special variant: same JSON, special added tokens dropped.
const vocab = tokJson.model.vocab;
for (const t of tokJson.added_tokens) {
  if (t.special && Object.prototype.hasOwnProperty.call(vocab, t.content)) {
    throw new Error(`special token ${t.content} is also in the BPE vocab: split-special emulation invalid`);
  }
}
const splitJson = { ...tokJson, added_tokens: tokJson.added_tokens.filter((t) => !t.special) };

const tok = new Tokenizer(tokJson, config);
const tokSplit = new Tokenizer(splitJson, config);

const lines = fs.readFileSync(args.cases, "utf8").split("\n").filter((l) => l.trim() !== "");
const out = [];
const seen = new Set();
for (const line of lines) {
  const c = JSON.parse(line);
  if (seen.has(c.id)) throw new Error(`duplicate case id ${c.id}`);
  seen.add(c.id);
  const rec = {
    id: c.id,
    ids: tok.encode(c.text, { add_special_tokens: false }).ids,
    ids_add_special: tok.encode(c.text, { add_special_tokens: true }).ids,
    ids_split_special: tokSplit.encode(c.text, { add_special_tokens: false }).ids,
  };
  for (const [k, v] of Object.entries(rec)) {
    if (Array.isArray(v) && v.some((x) => !Number.isInteger(x))) {
      throw new Error(`case ${c.id}: ${k} has a non-integer id (unknown token?): ${JSON.stringify(v)}`);
    }
  }
  out.push(JSON.stringify(rec));
}
if (args["decode-out"]) {
  // A fixed-seed LCG: the same sequences on every run and machine.
  let state = 0x2545f491;
  const rand = (n) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state % n;
  };
  const size = Object.keys(vocab).length;
  const byteLike = Object.entries(vocab)
    .filter(([t]) => [...t].length === 1)
    .map(([, id]) => id);
  const specials = tokJson.added_tokens.map((t) => t.id);
  const dec = [];
  for (let i = 0; i < 300; i++) {
    const ids = [];
    const n = 1 + rand(12);
    for (let k = 0; k < n; k++) {
      const r = rand(10);
      ids.push(r < 5 ? rand(size) : r < 9 ? byteLike[rand(byteLike.length)] : specials[rand(specials.length)]);
    }
    const opts = { clean_up_tokenization_spaces: false };
    dec.push(JSON.stringify({
      id: `decode-${i}`,
      ids,
      text: tok.decode(ids, { ...opts, skip_special_tokens: false }),
      text_skip_special: tok.decode(ids, { ...opts, skip_special_tokens: true }),
    }));
  }
  fs.writeFileSync(args["decode-out"], dec.join("\n") + "\n");
}
const text = out.join("\n") + "\n";
if (args.out) fs.writeFileSync(args.out, text);
else process.stdout.write(text);
process.stderr.write(
  `oracle: @huggingface/tokenizers ${oracleVersion}, ${path.basename(path.dirname(args.tokenizer))}/` +
    `${path.basename(args.tokenizer)}: ${out.length} cases\n`,
);
