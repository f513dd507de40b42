#!/usr/bin/env bash
# Seed corpora for the fuzz targets, made with the project's own tools (nothing is downloaded):
#   make_seeds.sh DIR   ->  DIR/<target>/ for fuzz_gguf, fuzz_safetensors, fuzz_tokenizer_json,
#                           fuzz_profile, fuzz_ids
# GGUF / safetensors: tiny random models from scripts/make_test_model.py (a few KiB to ~90 KiB
# each); tokenizer.json: a small synthetic byte-level BPE written here; profiles: the shipped
# configs/*.rlx.toml plus one with device sections; ids: a few lists. Regenerated each time
# (seconds); the committed regression inputs live in tests/corpus/<target>/.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
out=$1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
py=${PYTHON:-python3}
mk() { "$py" "$root/scripts/make_test_model.py" --quiet "$@"; }
tiny=(--dim 32 --layers 1 --heads 2 --kv-heads 1 --ffn 64 --vocab 320)

rm -rf "$out.tmp"
mkdir -p "$out.tmp"/{fuzz_gguf,fuzz_safetensors,fuzz_tokenizer_json,fuzz_profile,fuzz_ids,fuzz_chat_template}
t=$out.tmp

# GGUF: both families, quantized and f32, tied and untied.
mk --family llama32 --dtype q8_0 "${tiny[@]}" --out "$t/fuzz_gguf/llama32-q8_0.gguf"
mk --family qwen3 --dtype q8_0 "${tiny[@]}" --untied --out "$t/fuzz_gguf/qwen3-q8_0.gguf"
mk --family llama32 --dtype f32 "${tiny[@]}" --out "$t/fuzz_gguf/llama32-f32.gguf"
mk --family qwen3 --dtype f16 "${tiny[@]}" --out "$t/fuzz_gguf/qwen3-f16.gguf"

# safetensors: model.safetensors alone (the fuzzer writes its input as one).
for spec in llama32:bf16 qwen3:f16; do
  fam=${spec%%:*} dt=${spec##*:}
  mk --family "$fam" --format safetensors --dtype "$dt" "${tiny[@]}" --out "$t/st-$fam"
  cp "$t/st-$fam/model.safetensors" "$t/fuzz_safetensors/$fam-$dt.safetensors"
  rm -rf "$t/st-$fam"
done

# tokenizer.json: byte-level BPE with merges, added tokens, NFC, Split + ByteLevel, and the
# variants the loader accepts (ByteLevel pre-tokenizer alone, TemplateProcessing).
"$py" - "$t/fuzz_tokenizer_json" <<'PY'
import json, sys
out = sys.argv[1]
def byte_alphabet():
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b); cs.append(256 + n); n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}
m = byte_alphabet()
vocab = {m[b]: i for i, b in enumerate(range(256))}
sp = m[ord(" ")]
merges = [("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o"), (sp, "w"), ("o", "r"),
          (sp + "w", "or"), ("l", "d"), (sp + "wor", "ld"), (sp, "t")]
for a, b in merges:
    vocab.setdefault(a + b, len(vocab))
specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>", "<|im_end|>", "<think>"]
added = []
for s in specials:
    i = len(vocab); vocab[s] = i
    added.append({"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                  "normalized": False, "special": s != "<think>"})
pat = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
       r"|\s*[\r\n]+|\s+(?!\S)|\s+")
base = {
    "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
    "normalizer": {"type": "NFC"},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pat}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
    "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                       "use_regex": True},
    "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
              "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
              "ignore_merges": False, "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
}
def dump(name, j):
    with open(f"{out}/{name}", "w", encoding="utf-8") as f:
        json.dump(j, f, ensure_ascii=False, separators=(",", ":"))
dump("split-nfc.json", base)
v = json.loads(json.dumps(base))
v["normalizer"] = None
v["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                      "use_regex": True}
v["model"]["merges"] = [[a, b] for a, b in merges]  # the newer pair form
bos = vocab["<|begin_of_text|>"]
v["post_processor"] = {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
               {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
    "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [bos],
                                              "tokens": ["<|begin_of_text|>"]}}}
dump("bytelevel-template.json", v)
w = json.loads(json.dumps(base))
w["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {"String": " "}
w["decoder"] = {"type": "Sequence", "decoders": [{"type": "ByteLevel"}]}
dump("split-string.json", w)
PY

# Profiles: the shipped ones, and one with device sections and every kind of value.
cp "$root"/configs/*.rlx.toml "$t/fuzz_profile/"
cat > "$t/fuzz_profile/devices.rlx.toml" <<'TOML'
[prefill]
cache = "dynamic"
capacity = 2
seq_cap = 512
fusion = false
precision = "f32"

[decode]
cache = "exact"
max_past = 1024
lm_head = "graph"
resident_kv = false

[memory]
max_seq = 2048
soft_fraction = 0.5
soft_budget_bytes = 1073741824

[sampling]
temperature = 0.0
top_k = 0
top_p = 1.0
seed = 42

[threads]
count = 2

[device.cuda.decode]
cache = "buckets"
capacity = 16

[device."cuda:0".memory]
max_seq = 4096

[device.vulkan.sampling]
min_p = 0.1
TOML

# Chat templates: ChatML with thinking, a Llama-3 style header, and one using the rest of the
# language (macros, namespaces, filters, tests, slicing, loop controls, raise_exception).
cat > "$t/fuzz_chat_template/chatml.jinja" <<'J2'
{%- for message in messages %}
{%- if message.role == "assistant" and "</think>" in message.content %}
{%- set content = message.content.split("</think>")[-1].lstrip("\n") %}
{%- else %}{%- set content = message.content %}{%- endif %}
{{- "<|im_start|>" + message.role + "\n" + content + "<|im_end|>\n" }}
{%- endfor %}
{%- if add_generation_prompt %}{{- "<|im_start|>assistant\n" }}
{%- if enable_thinking is defined and enable_thinking is false %}{{- "<think>\n\n</think>\n\n" }}{%- endif %}
{%- endif %}
J2
cat > "$t/fuzz_chat_template/header.jinja" <<'J2'
{{- bos_token }}
{%- if messages[0]['role'] == 'system' %}{%- set system = messages[0]['content']|trim %}{%- set messages = messages[1:] %}
{%- else %}{%- set system = "" %}{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\n\nToday Date: " + date_string + "\n\n" + system + "<|eot_id|>" }}
{%- for m in messages %}
{{- '<|start_header_id|>' + m['role'] + '<|end_header_id|>\n\n' + m['content'] | trim + '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif %}
J2
cat > "$t/fuzz_chat_template/features.jinja" <<'J2'
{%- macro show(m, sep=": ") -%}{{ m.role | upper }}{{ sep }}{{ m.content | replace("\n", " ") }}{%- endmacro -%}
{%- set ns = namespace(n=0, last=none) -%}
{%- for m in messages if m.role != "system" -%}
{%- if loop.first %}[{{ loop.length }}]{% endif -%}
{%- set ns.n = ns.n + m.content | length -%}
{%- if m.role not in ["user", "assistant"] %}{{ raise_exception("bad role " ~ m.role) }}{% endif -%}
{{ show(m) }}{{ "," if not loop.last else "" }}{% if loop.index0 > 8 %}{% break %}{% endif -%}
{%- endfor -%}
{{ ns.n }} {{ (messages | map(attribute="role") | list | join("|")) }} {{ messages[-1].content[:3] }}
{{ {"a": [1, 2.5, true, none], "b": "x"} | tojson }} {{ range(3) | list | length }} {{ 7 // 2 }} {{ 7 % 3 }}
{%- if bos_token is string and eos_token | length > 0 and not (1 > 2) %} ok{% endif %}
{{ "%s-%d" | format("a", 3) if false else strftime_now("%Y") | length }}
J2

# --prompt-ids lists.
printf '1,42' > "$t/fuzz_ids/two"
printf '0' > "$t/fuzz_ids/zero"
printf '2147483647,0,7' > "$t/fuzz_ids/max"
printf '128000,9906,11,1917,0' > "$t/fuzz_ids/llama"
printf '1,,2' > "$t/fuzz_ids/empty-item"
printf '2147483648' > "$t/fuzz_ids/over"

rm -rf "$out"
mv "$t" "$out"
for d in "$out"/*/; do
  echo "make_seeds: $(basename "$d"): $(ls "$d" | wc -l) files, $(du -sk "$d" | cut -f1) KiB"
done
