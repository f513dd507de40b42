#!/usr/bin/env python3
"""Write a synthetic random-weight Llama-3.2-style or Qwen3-dense model, as GGUF or safetensors.

The same --seed (and shape flags) gives the same weights in both formats:
  --format safetensors  OUT/ = config.json + model.safetensors, Hugging Face names and layout
                        (model.embed_tokens.weight, model.layers.N.self_attn.q_proj.weight, ...,
                        model.norm.weight, lm_head.weight when untied); rope rotates halves.
  --format gguf         OUT = one GGUF v3 file, llama.cpp names (token_embd.weight,
                        blk.N.attn_q.weight, ..., output_norm.weight, output.weight when untied).
                        llama: the attn_q/attn_k rows are permuted like convert_hf_to_gguf.py so
                        that llama.cpp's adjacent-pair ("normal") rope gives the HF result, and
                        Llama-3 rope scaling is a rope_freqs.weight tensor of per-frequency
                        factors. qwen3: neox (halves) rope, no permutation; attn_q_norm/attn_k_norm.

Weights: every 2-D matrix ~ N(0, std^2) in --dtype (quantized types are real ggml blocks from
rlxmodel.quantize); 1-D tensors (norms, rope_freqs) are f32, norms ~ 1 + N(0, norm_std^2).
Values are drawn in float32 from numpy's default_rng([seed, crc32(HF tensor name)]).
The file (each file, for safetensors) is written to a temporary name and renamed.

Examples:
  make_test_model.py --family llama32 --format gguf --dtype q4_k --out /tmp/l.gguf
  make_test_model.py --family qwen3 --format safetensors --dtype bf16 --head-dim 128 --out /tmp/q
  make_test_model.py --family llama32 --dim 2048 --layers 16 --heads 32 --kv-heads 8 --ffn 8192 \\
      --vocab 128256 --dtype q8_0 --out llama1b.gguf          # Llama-3.2-1B shape
"""

import argparse
import json
import math
import os
import sys
import zlib

sys.dont_write_bytecode = True   # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rlxmodel.env import ensure_numpy  # noqa: E402

ensure_numpy()

import numpy as np  # noqa: E402

from rlxmodel import gguf  # noqa: E402
from rlxmodel.ggml_types import GGML_TYPES, LLAMA_FTYPE  # noqa: E402
from rlxmodel.io import write_bytes_atomic  # noqa: E402
from rlxmodel.quantize import quantize, to_bf16_bits  # noqa: E402
from rlxmodel.safetensors import write_safetensors  # noqa: E402

DTYPES = ["f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1",
          "q2_k", "q3_k", "q4_k", "q5_k", "q6_k"]
SAFETENSORS_DTYPES = {"f32": ("F32", "float32"), "f16": ("F16", "float16"), "bf16": ("BF16", "bfloat16")}

FAMILIES = {
    "llama32": dict(arch="llama", model_type="llama", hf_class="LlamaForCausalLM", pre="llama-bpe",
                    rope_theta=500000.0, eps=1e-5, ctx=131072, rope_scaling="32,1,4,8192",
                    specials=["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                              "<|end_header_id|>", "<|eot_id|>"],
                    bos="<|begin_of_text|>", eos="<|end_of_text|>", add_bos=True),
    "qwen3": dict(arch="qwen3", model_type="qwen3", hf_class="Qwen3ForCausalLM", pre="qwen2",
                  rope_theta=1000000.0, eps=1e-6, ctx=40960, rope_scaling="none",
                  specials=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                  bos="<|endoftext|>", eos="<|endoftext|>", add_bos=False),
}

ROWS_PER_CHUNK_ELEMS = 1 << 20   # quantize at most ~1M elements at a time


# ----------------------------------------------------------------------------------------------
# hyper-parameters
# ----------------------------------------------------------------------------------------------
def f32(v):
    """The float32 value of v, as a Python float (what a GGUF f32 field holds)."""
    return float(np.float32(v))


def parse_rope_scaling(spec):
    """'none' or 'FACTOR,LOW_FREQ_FACTOR,HIGH_FREQ_FACTOR,ORIGINAL_CTX' -> dict or None."""
    if spec is None or spec.lower() in ("none", "off", ""):
        return None
    parts = spec.split(",")
    if len(parts) != 4:
        raise SystemExit("--rope-scaling takes 'none' or FACTOR,LOW_FREQ_FACTOR,HIGH_FREQ_FACTOR,ORIGINAL_CTX")
    factor, low, high = (float(p) for p in parts[:3])
    orig = int(parts[3])
    if not (factor >= 1 and 0 < low < high and orig > 0):
        raise SystemExit("--rope-scaling: need factor >= 1, 0 < low < high, original ctx > 0")
    return dict(rope_type="llama3", factor=factor, low_freq_factor=low, high_freq_factor=high,
                original_max_position_embeddings=orig)


def llama3_rope_factors(head_dim, theta, rs):
    """Per-frequency divisors of Llama-3 rope scaling (what convert_hf_to_gguf.py writes to
    rope_freqs.weight): 1 for short wavelengths, `factor` for long ones, a smooth blend between."""
    inv_freq = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    wavelen = 2 * math.pi / inv_freq
    orig, low, high, factor = (rs["original_max_position_embeddings"], rs["low_freq_factor"],
                               rs["high_freq_factor"], rs["factor"])
    smooth = (orig / wavelen - low) / (high - low)
    mid = 1.0 / ((1 - smooth) / factor + smooth)
    out = np.where(wavelen < orig / high, 1.0, np.where(wavelen > orig / low, factor, mid))
    return out.astype(np.float32)


def resolve(args):
    fam = FAMILIES[args.family]
    h = dict(family=args.family, arch=fam["arch"], dim=args.dim, layers=args.layers, heads=args.heads,
             kv_heads=args.kv_heads or args.heads, ffn=args.ffn, vocab=args.vocab, seed=args.seed,
             dtype=args.dtype, tied=args.tied, std=args.std, norm_std=args.norm_std)
    if args.family == "llama32":
        if args.dim % args.heads:
            raise SystemExit(f"--dim {args.dim} is not a multiple of --heads {args.heads}")
        if args.head_dim and args.head_dim != args.dim // args.heads:
            raise SystemExit("llama32: head_dim is dim/heads; do not pass a different --head-dim")
        h["head_dim"] = args.dim // args.heads
    else:
        h["head_dim"] = args.head_dim or args.dim // args.heads
    if h["head_dim"] % 2:
        raise SystemExit(f"head_dim {h['head_dim']} must be even (rope rotates pairs)")
    if h["heads"] % h["kv_heads"]:
        raise SystemExit(f"--heads {h['heads']} is not a multiple of --kv-heads {h['kv_heads']}")
    h["ctx"] = args.ctx or fam["ctx"]
    h["rope_theta"] = f32(args.rope_theta or fam["rope_theta"])
    h["eps"] = f32(args.eps or fam["eps"])
    rs = parse_rope_scaling(fam["rope_scaling"] if args.rope_scaling is None else args.rope_scaling)
    if rs and args.family != "llama32":
        raise SystemExit("--rope-scaling (llama3 style) is only supported for --family llama32")
    h["rope_scaling"] = rs
    if args.format == "safetensors" and args.dtype not in SAFETENSORS_DTYPES:
        raise SystemExit(f"--format safetensors supports --dtype f32, f16 or bf16, not {args.dtype}")
    # every 2-D weight is quantized along its rows: check the row lengths against the block size
    bs = GGML_TYPES[args.dtype][1]
    rows = {"--dim (embedding, q/k/v, gate/up, output rows)": h["dim"],
            "--heads x head_dim (attn_output rows)": h["heads"] * h["head_dim"],
            "--ffn (ffn_down rows)": h["ffn"]}
    bad = [f"{k} = {v}" for k, v in rows.items() if v % bs]
    if bad:
        kind = "k-quant super-blocks" if bs == 256 else "blocks"
        raise SystemExit(f"--dtype {args.dtype} needs row lengths that are multiples of {bs} ({kind}); "
                         f"not: {'; '.join(bad)}")
    n_special = len(fam["specials"])
    if h["vocab"] < 256 + n_special:
        raise SystemExit(f"--vocab {h['vocab']} too small: need >= {256 + n_special} "
                         f"(256 byte tokens + {n_special} special tokens)")
    return h


# ----------------------------------------------------------------------------------------------
# weights, in Hugging Face names and layout ([out_features, in_features])
# ----------------------------------------------------------------------------------------------
def hf_weights(h):
    """List of (hf_name, shape, kind); kind is 'matrix' or 'norm'."""
    D, hd, F, V = h["dim"], h["head_dim"], h["ffn"], h["vocab"]
    out = [("model.embed_tokens.weight", (V, D), "matrix")]
    for i in range(h["layers"]):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", (D,), "norm"),
                (p + "self_attn.q_proj.weight", (h["heads"] * hd, D), "matrix"),
                (p + "self_attn.k_proj.weight", (h["kv_heads"] * hd, D), "matrix"),
                (p + "self_attn.v_proj.weight", (h["kv_heads"] * hd, D), "matrix"),
                (p + "self_attn.o_proj.weight", (D, h["heads"] * hd), "matrix")]
        if h["arch"] == "qwen3":
            out += [(p + "self_attn.q_norm.weight", (hd,), "norm"),
                    (p + "self_attn.k_norm.weight", (hd,), "norm")]
        out += [(p + "post_attention_layernorm.weight", (D,), "norm"),
                (p + "mlp.gate_proj.weight", (F, D), "matrix"),
                (p + "mlp.up_proj.weight", (F, D), "matrix"),
                (p + "mlp.down_proj.weight", (D, F), "matrix")]
    out.append(("model.norm.weight", (D,), "norm"))
    if not h["tied"]:
        out.append(("lm_head.weight", (V, D), "matrix"))
    return out


def generate(h, name, shape, kind):
    """The float32 values of one tensor; depends only on (seed, name, shape, kind, std)."""
    rng = np.random.default_rng([h["seed"], zlib.crc32(name.encode())])
    x = rng.standard_normal(shape, dtype=np.float32)
    if kind == "norm":
        return (np.float32(1) + np.float32(h["norm_std"]) * x).astype(np.float32)
    return (np.float32(h["std"]) * x).astype(np.float32)


def permute_for_adjacent_pair_rope(w, n_heads):
    """HF rotates halves: pairs (i, i + hd/2) of each head. llama.cpp's llama arch rotates
    adjacent pairs (2i, 2i+1). convert_hf_to_gguf.py therefore reorders the q/k rows within each
    head: GGUF row h*hd + 2*i + t = HF row h*hd + t*hd/2 + i (t in {0, 1}, i < hd/2)."""
    rows, cols = w.shape
    hd = rows // n_heads
    return w.reshape(n_heads, 2, hd // 2, cols).transpose(0, 2, 1, 3).reshape(rows, cols)


GGUF_NAMES = {
    "input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm", "post_attention_layernorm": "ffn_norm",
    "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
}


def gguf_name(hf_name):
    if hf_name == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf_name == "model.norm.weight":
        return "output_norm.weight"
    if hf_name == "lm_head.weight":
        return "output.weight"
    parts = hf_name.split(".")                 # model.layers.N.<module>.weight
    return f"blk.{parts[2]}.{GGUF_NAMES['.'.join(parts[3:-1])]}.weight"


# ----------------------------------------------------------------------------------------------
# tokenizer (byte-level BPE, GPT-2 style): enough for llama.cpp to load the file
# ----------------------------------------------------------------------------------------------
def byte_tokens():
    """GPT-2's byte -> printable-unicode table: token i is the string for byte i."""
    keep = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    table, extra = [], 0
    for b in range(256):
        if b in keep:
            table.append(chr(b))
        else:
            table.append(chr(256 + extra))
            extra += 1
    return table


def make_vocab(h):
    fam = FAMILIES[h["family"]]
    tokens = byte_tokens()
    seen = set(tokens)
    merges = []
    n_normal = h["vocab"] - len(fam["specials"])
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    space = tokens[ord(" ")]                   # 'Ġ'
    frontier = [space] + list(letters)
    while len(tokens) < n_normal:              # merges "a b" -> "ab", longest words grow last
        nxt = []
        for a in frontier:
            for c in letters:
                t = a + c
                if len(tokens) >= n_normal:
                    break
                if t not in seen:
                    seen.add(t)
                    tokens.append(t)
                    merges.append(f"{a} {c}")
                    nxt.append(t)
        frontier = nxt
    tokens = tokens[:n_normal] + fam["specials"]
    types = [1] * n_normal + [3] * len(fam["specials"])     # 1 normal, 3 control
    return tokens, types, merges, n_normal


def special_ids(h):
    fam = FAMILIES[h["family"]]
    base = h["vocab"] - len(fam["specials"])
    return base + fam["specials"].index(fam["bos"]), base + fam["specials"].index(fam["eos"])


# ----------------------------------------------------------------------------------------------
# writers
# ----------------------------------------------------------------------------------------------
def encode_rows(x, dtype):
    """float32 (rows, n) -> bytes of `dtype`, quantizing a bounded number of rows at a time."""
    rows_per = max(1, ROWS_PER_CHUNK_ELEMS // x.shape[1])
    parts = [quantize(x[r:r + rows_per], dtype) for r in range(0, x.shape[0], rows_per)]
    return np.concatenate(parts, axis=0)


def write_gguf_model(h, path):
    A = h["arch"]
    U32, F32, STR, BOOL, ARR, I32 = gguf.UINT32, gguf.FLOAT32, gguf.STRING, gguf.BOOL, gguf.ARRAY, gguf.INT32
    tokens, types, merges, _ = make_vocab(h)
    bos, eos = special_ids(h)
    kvs = [("general.architecture", STR, A),
           ("general.type", STR, "model"),
           ("general.name", STR, f"rlx-synthetic-{h['family']}-{h['dtype']}"),
           ("general.file_type", U32, LLAMA_FTYPE[h["dtype"]]),
           ("general.quantization_version", U32, 2),
           ("general.alignment", U32, gguf.DEFAULT_ALIGNMENT),
           (f"{A}.vocab_size", U32, h["vocab"]),
           (f"{A}.context_length", U32, h["ctx"]),
           (f"{A}.embedding_length", U32, h["dim"]),
           (f"{A}.block_count", U32, h["layers"]),
           (f"{A}.feed_forward_length", U32, h["ffn"]),
           (f"{A}.attention.head_count", U32, h["heads"]),
           (f"{A}.attention.head_count_kv", U32, h["kv_heads"]),
           (f"{A}.attention.key_length", U32, h["head_dim"]),
           (f"{A}.attention.value_length", U32, h["head_dim"]),
           (f"{A}.attention.layer_norm_rms_epsilon", F32, h["eps"]),
           (f"{A}.rope.freq_base", F32, h["rope_theta"]),
           (f"{A}.rope.dimension_count", U32, h["head_dim"]),
           ("tokenizer.ggml.model", STR, "gpt2"),
           ("tokenizer.ggml.pre", STR, FAMILIES[h["family"]]["pre"]),
           ("tokenizer.ggml.tokens", ARR, (STR, tokens)),
           ("tokenizer.ggml.token_type", ARR, (I32, types)),
           ("tokenizer.ggml.merges", ARR, (STR, merges)),
           ("tokenizer.ggml.bos_token_id", U32, bos),
           ("tokenizer.ggml.eos_token_id", U32, eos),
           ("tokenizer.ggml.add_bos_token", BOOL, FAMILIES[h["family"]]["add_bos"]),
           ("rlx.synthetic.seed", U32, h["seed"] & 0xFFFFFFFF)]
    if A == "qwen3":
        kvs.append(("tokenizer.ggml.padding_token_id", U32, eos))

    specs = []
    if h["rope_scaling"]:
        rf = llama3_rope_factors(h["head_dim"], h["rope_theta"], h["rope_scaling"])
        specs.append(gguf.TensorSpec("rope_freqs.weight", rf.shape, "f32", lambda rf=rf: rf.astype("<f4")))
    for name, shape, kind in hf_weights(h):
        def produce(name=name, shape=shape, kind=kind):
            x = generate(h, name, shape, kind)
            if kind == "norm":
                return x.astype("<f4")
            if A == "llama" and name.endswith("self_attn.q_proj.weight"):
                x = permute_for_adjacent_pair_rope(x, h["heads"])
            elif A == "llama" and name.endswith("self_attn.k_proj.weight"):
                x = permute_for_adjacent_pair_rope(x, h["kv_heads"])
            return encode_rows(x, h["dtype"])
        specs.append(gguf.TensorSpec(gguf_name(name), shape, "f32" if kind == "norm" else h["dtype"], produce))
    gguf.write_gguf(path, kvs, specs)


def hf_config(h):
    fam = FAMILIES[h["family"]]
    bos, eos = special_ids(h)
    cfg = {
        "architectures": [fam["hf_class"]],
        "model_type": fam["model_type"],
        "hidden_size": h["dim"],
        "intermediate_size": h["ffn"],
        "num_hidden_layers": h["layers"],
        "num_attention_heads": h["heads"],
        "num_key_value_heads": h["kv_heads"],
        "head_dim": h["head_dim"],
        "hidden_act": "silu",
        "max_position_embeddings": h["ctx"],
        "rms_norm_eps": h["eps"],          # float32-exact, same value as the GGUF field
        "rope_theta": h["rope_theta"],
        "rope_scaling": h["rope_scaling"],
        "vocab_size": h["vocab"],
        "tie_word_embeddings": h["tied"],
        "bos_token_id": bos,
        "eos_token_id": eos,
        "torch_dtype": SAFETENSORS_DTYPES[h["dtype"]][1],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "initializer_range": h["std"],
        "use_cache": True,
    }
    if fam["model_type"] == "llama":
        cfg.update(mlp_bias=False, pretraining_tp=1)
    else:
        cfg.update(use_sliding_window=False, sliding_window=None, max_window_layers=h["layers"])
    return cfg


def write_safetensors_model(h, out_dir):
    st_dtype = SAFETENSORS_DTYPES[h["dtype"]][0]
    tensors = []
    for name, shape, kind in hf_weights(h):
        def produce(name=name, shape=shape, kind=kind):
            x = generate(h, name, shape, kind)
            if kind == "norm" or st_dtype == "F32":
                return x.astype("<f4")
            if st_dtype == "F16":
                return x.astype("<f2")
            return to_bf16_bits(x).astype("<u2")
        tensors.append((name, "F32" if kind == "norm" else st_dtype, shape, produce))
    os.makedirs(out_dir, exist_ok=True)
    write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors, {"format": "pt"})
    write_bytes_atomic(os.path.join(out_dir, "config.json"),
                       (json.dumps(hf_config(h), indent=2) + "\n").encode())


# ----------------------------------------------------------------------------------------------
class _HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    pass


def build_parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=_HelpFormatter)
    ap.add_argument("--family", required=True, choices=sorted(FAMILIES))
    ap.add_argument("--format", default="gguf", choices=["gguf", "safetensors"])
    ap.add_argument("--out", required=True, help="a .gguf file, or a directory for safetensors")
    ap.add_argument("--dtype", default="f32", type=str.lower, choices=DTYPES,
                    help="type of every 2-D weight (1-D tensors stay f32); safetensors: f32/f16/bf16")
    ap.add_argument("--dim", type=int, default=256, help="hidden size")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2, help="0 = --heads")
    ap.add_argument("--head-dim", type=int, default=0,
                    help="qwen3: explicit head dim (default dim/heads); llama32: always dim/heads")
    ap.add_argument("--ffn", type=int, default=512, help="intermediate size")
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--ctx", type=int, default=0, help="context length (default 131072 llama32, 40960 qwen3)")
    ap.add_argument("--rope-theta", type=float, default=0.0, help="default 500000 llama32, 1e6 qwen3")
    ap.add_argument("--rope-scaling", default=None, metavar="none|FACTOR,LOW,HIGH,ORIG_CTX",
                    help="Llama-3 rope scaling (factor, low/high freq factor, original context); "
                         "default 32,1,4,8192 for llama32 (as Llama 3.2), none for qwen3")
    ap.add_argument("--no-rope-scaling", dest="rope_scaling", action="store_const", const="none")
    ap.add_argument("--eps", type=float, default=0.0, help="rms norm eps (default 1e-5 llama32, 1e-6 qwen3)")
    tie = ap.add_mutually_exclusive_group()
    tie.add_argument("--tied", dest="tied", action="store_true", default=True,
                     help="no output weight: logits use the token embedding (default)")
    tie.add_argument("--untied", dest="tied", action="store_false", help="write a separate output weight")
    ap.add_argument("--std", type=float, default=0.02, help="std of the weight matrices")
    ap.add_argument("--norm-std", type=float, default=0.1, help="norm weights = 1 + norm_std * N(0,1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quiet", action="store_true")
    return ap


def main(argv=None):
    args = build_parser().parse_args(argv)
    h = resolve(args)
    if args.format == "gguf":
        write_gguf_model(h, args.out)
    else:
        write_safetensors_model(h, args.out)
    if not args.quiet:
        n = sum(int(np.prod(s)) for _, s, _ in hf_weights(h))
        print(f"wrote {args.out}: {args.family} {args.format} {args.dtype}, {n / 1e6:.2f}M params, "
              f"dim {h['dim']} x {h['layers']} layers, heads {h['heads']}/{h['kv_heads']} x {h['head_dim']}, "
              f"ffn {h['ffn']}, vocab {h['vocab']}, {'tied' if h['tied'] else 'untied'}, "
              f"rope_scaling {'on' if h['rope_scaling'] else 'off'}, seed {h['seed']}", file=sys.stderr)
    return h


if __name__ == "__main__":
    main()
