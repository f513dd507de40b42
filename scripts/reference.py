#!/usr/bin/env python3
"""Independent float64 numpy forward pass for Llama-3.2-style and Qwen3-dense models.

Reads a GGUF file (llama.cpp names; "llama" or "qwen3" arch) or a Hugging Face directory
(config.json + model.safetensors, model_type "llama" or "qwen3") with its own readers,
dequantizes every ggml block exactly as stored (rlxmodel.dequantize) and runs the model in
float64: RMSNorm, GQA causal attention, SwiGLU, rope, tied embeddings when the output weight
is absent.

Rope, by source:
  GGUF llama  adjacent pairs (x[2i], x[2i+1]) on the q/k rows as stored (convert_hf_to_gguf.py
              permuted them); Llama-3 scaling from rope_freqs.weight: inv_freq[i] /= rope_freqs[i]
  GGUF qwen3  halves (x[i], x[i + hd/2]) ("neox"), q/k RMSNorm per head before rope
  HF          halves; Llama-3 scaling computed from config.json rope_scaling (rope_type llama3),
              the per-frequency factors rounded to float32 as a GGUF rope_freqs.weight stores them
  inv_freq[i] = rope_theta ** (-2i / head_dim), angle = position * inv_freq[i]

Usage:
  reference.py --weights PATH --ids 1,2,3 [--logits-out F.f32] [--all-logits-out F.f32] [--greedy N]
    --logits-out      last position's logits, raw little-endian float32 [vocab]
    --all-logits-out  every prompt position's logits, raw little-endian float32 [n_ids, vocab]
    --greedy N        print N greedy (argmax, lowest id on ties) token ids continuing the sequence
Memory: the weights are held dequantized in float64 (8 bytes a parameter): meant for small models.
"""

import argparse
import json
import math
import os
import sys

sys.dont_write_bytecode = True   # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rlxmodel.env import ensure_numpy  # noqa: E402

ensure_numpy()

import numpy as np  # noqa: E402

from rlxmodel.dequantize import dequantize  # noqa: E402
from rlxmodel.gguf import GGUFFile  # noqa: E402
from rlxmodel.safetensors import SafetensorsFile  # noqa: E402


class Model:
    """Hyper-parameters plus float64 weights in [out_features, in_features] layout.

    Weight keys: embed [V, D], norm [D], lm_head [V, D] (the embedding when tied), and per layer
    (layers[i]): attn_norm [D], wq [H*hd, D], wk [KV*hd, D], wv [KV*hd, D], wo [D, H*hd],
    q_norm/k_norm [hd] (qwen3), ffn_norm [D], w_gate [F, D], w_up [F, D], w_down [D, F]."""

    def __init__(self):
        self.source = ""          # "gguf" or "hf"
        self.arch = ""            # "llama" or "qwen3"
        self.dim = self.n_layers = self.n_heads = self.n_kv = self.head_dim = self.ffn = self.vocab = 0
        self.eps = 0.0
        self.rope_pairs = "halves"      # "adjacent" (GGUF llama) or "halves"
        self.inv_freq = None            # float64 [hd/2]
        self.qk_norm = False
        self.bos = self.eos = None
        self.tied = True
        self.w = {}
        self.layers = []


# ----------------------------------------------------------------------------------------------
# loading
# ----------------------------------------------------------------------------------------------
def base_inv_freq(theta, head_dim):
    return theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)


def hf_llama3_factors(head_dim, theta, rs):
    """Llama-3 rope scaling as transformers defines it (rope_type "llama3"), expressed as a
    divisor of each base frequency: wavelengths shorter than orig/high_freq_factor keep their
    frequency, longer than orig/low_freq_factor are divided by `factor`, and in between the
    scaled and unscaled frequencies are blended linearly in orig/wavelength."""
    factor = float(rs["factor"])
    low = float(rs.get("low_freq_factor", 1.0))
    high = float(rs.get("high_freq_factor", 4.0))
    orig = float(rs.get("original_max_position_embeddings", 8192))
    out = []
    for f in base_inv_freq(theta, head_dim):
        wavelen = 2 * math.pi / f
        if wavelen < orig / high:
            out.append(1.0)
        elif wavelen > orig / low:
            out.append(factor)
        else:
            s = (orig / wavelen - low) / (high - low)
            # scaled frequency = (1 - s) * f / factor + s * f  ->  divisor = 1 / ((1 - s) / factor + s)
            out.append(1.0 / ((1.0 - s) / factor + s))
    return np.array(out, dtype=np.float64)


def load_gguf(path):
    g = GGUFFile(path)
    md = g.metadata
    m = Model()
    m.source = "gguf"
    m.arch = md.get("general.architecture")
    if m.arch not in ("llama", "qwen3"):
        raise SystemExit(f"{path}: architecture {m.arch!r} is not llama or qwen3")
    A = m.arch
    m.dim = int(md[f"{A}.embedding_length"])
    m.n_layers = int(md[f"{A}.block_count"])
    m.n_heads = int(md[f"{A}.attention.head_count"])
    m.n_kv = int(md.get(f"{A}.attention.head_count_kv", m.n_heads))
    m.head_dim = int(md.get(f"{A}.attention.key_length", m.dim // m.n_heads))
    if int(md.get(f"{A}.attention.value_length", m.head_dim)) != m.head_dim:
        raise SystemExit("value_length != key_length is not supported")
    if int(md.get(f"{A}.rope.dimension_count", m.head_dim)) != m.head_dim:
        raise SystemExit("partial rope (rope.dimension_count != head_dim) is not supported")
    m.ffn = int(md[f"{A}.feed_forward_length"])
    m.eps = float(md[f"{A}.attention.layer_norm_rms_epsilon"])
    theta = float(md.get(f"{A}.rope.freq_base", 10000.0))
    m.rope_pairs = "adjacent" if A == "llama" else "halves"
    m.qk_norm = A == "qwen3"
    m.bos = md.get("tokenizer.ggml.bos_token_id")
    m.eos = md.get("tokenizer.ggml.eos_token_id")

    def get(name):
        t = g.tensors[name]
        return dequantize(g.raw(name), t.tname, t.shape)

    m.inv_freq = base_inv_freq(theta, m.head_dim)
    if "rope_freqs.weight" in g.tensors:
        rf = get("rope_freqs.weight")
        if rf.shape != (m.head_dim // 2,):
            raise SystemExit(f"rope_freqs.weight has shape {rf.shape}, expected ({m.head_dim // 2},)")
        m.inv_freq = m.inv_freq / rf

    m.w["embed"] = get("token_embd.weight")
    m.vocab = m.w["embed"].shape[0]
    m.w["norm"] = get("output_norm.weight")
    m.tied = "output.weight" not in g.tensors
    m.w["lm_head"] = m.w["embed"] if m.tied else get("output.weight")
    names = dict(attn_norm="attn_norm", wq="attn_q", wk="attn_k", wv="attn_v", wo="attn_output",
                 ffn_norm="ffn_norm", w_gate="ffn_gate", w_up="ffn_up", w_down="ffn_down")
    if m.qk_norm:
        names.update(q_norm="attn_q_norm", k_norm="attn_k_norm")
    for i in range(m.n_layers):
        m.layers.append({k: get(f"blk.{i}.{v}.weight") for k, v in names.items()})
    return m


def load_hf(path):
    d = path if os.path.isdir(path) else os.path.dirname(path)
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    m = Model()
    m.source = "hf"
    mt = cfg.get("model_type")
    if mt not in ("llama", "qwen3"):
        raise SystemExit(f"{d}: model_type {mt!r} is not llama or qwen3")
    m.arch = mt
    m.dim = int(cfg["hidden_size"])
    m.n_layers = int(cfg["num_hidden_layers"])
    m.n_heads = int(cfg["num_attention_heads"])
    m.n_kv = int(cfg.get("num_key_value_heads") or m.n_heads)
    m.head_dim = int(cfg.get("head_dim") or m.dim // m.n_heads)
    m.ffn = int(cfg["intermediate_size"])
    m.eps = float(cfg["rms_norm_eps"])
    theta = float(cfg.get("rope_theta", 10000.0))
    m.rope_pairs = "halves"
    m.qk_norm = mt == "qwen3"
    m.bos, m.eos = cfg.get("bos_token_id"), cfg.get("eos_token_id")
    if isinstance(m.eos, list):
        m.eos = m.eos[0] if m.eos else None
    m.inv_freq = base_inv_freq(theta, m.head_dim)
    rs = cfg.get("rope_scaling")
    if rs:
        kind = rs.get("rope_type", rs.get("type"))
        if kind == "llama3":
            factors = hf_llama3_factors(m.head_dim, theta, rs).astype(np.float32).astype(np.float64)
            m.inv_freq = m.inv_freq / factors
        elif kind != "default":
            raise SystemExit(f"rope_scaling type {kind!r} is not supported")

    # one file, or shards listed in model.safetensors.index.json
    index = os.path.join(d, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            wm = json.load(f)["weight_map"]
        files = {fn: SafetensorsFile(os.path.join(d, fn)) for fn in sorted(set(wm.values()))}
        where = {name: files[fn] for name, fn in wm.items()}
    else:
        st = SafetensorsFile(os.path.join(d, "model.safetensors"))
        where = {name: st for name in st.tensors}

    def get(name):
        if name not in where:
            raise SystemExit(f"{d}: tensor {name} missing")
        return where[name].get_f64(name)

    m.w["embed"] = get("model.embed_tokens.weight")
    m.vocab = m.w["embed"].shape[0]
    m.w["norm"] = get("model.norm.weight")
    m.tied = bool(cfg.get("tie_word_embeddings", False)) or "lm_head.weight" not in where
    m.w["lm_head"] = m.w["embed"] if m.tied else get("lm_head.weight")
    names = dict(attn_norm="input_layernorm", wq="self_attn.q_proj", wk="self_attn.k_proj",
                 wv="self_attn.v_proj", wo="self_attn.o_proj", ffn_norm="post_attention_layernorm",
                 w_gate="mlp.gate_proj", w_up="mlp.up_proj", w_down="mlp.down_proj")
    if m.qk_norm:
        names.update(q_norm="self_attn.q_norm", k_norm="self_attn.k_norm")
    for i in range(m.n_layers):
        m.layers.append({k: get(f"model.layers.{i}.{v}.weight") for k, v in names.items()})
    return m


def load(path):
    if os.path.isdir(path) or path.endswith((".safetensors", "config.json")):
        m = load_hf(path)
    else:
        m = load_gguf(path)
    check_shapes(m)
    return m


def check_shapes(m):
    D, H, KV, hd, F, V = m.dim, m.n_heads, m.n_kv, m.head_dim, m.ffn, m.vocab
    want = dict(attn_norm=(D,), wq=(H * hd, D), wk=(KV * hd, D), wv=(KV * hd, D), wo=(D, H * hd),
                ffn_norm=(D,), w_gate=(F, D), w_up=(F, D), w_down=(D, F), q_norm=(hd,), k_norm=(hd,))
    for i, L in enumerate(m.layers):
        for k, w in L.items():
            if w.shape != want[k]:
                raise SystemExit(f"layer {i} {k}: shape {w.shape}, expected {want[k]}")
    if m.w["embed"].shape != (V, D) or m.w["lm_head"].shape != (V, D) or m.w["norm"].shape != (D,):
        raise SystemExit("embedding / output shapes do not match the hyper-parameters")
    if H % KV:
        raise SystemExit("head_count is not a multiple of head_count_kv")


# ----------------------------------------------------------------------------------------------
# forward pass
# ----------------------------------------------------------------------------------------------
def rms_norm(x, w, eps):
    """x [..., n] * w [n] / sqrt(mean(x^2) + eps) over the last axis."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, pos, inv_freq, pairs):
    """x [T, n_heads, hd], pos [T]. Rotates each pair (a, b) by angle pos * inv_freq[i]:
    a' = a cos - b sin, b' = a sin + b cos. pairs: "adjacent" (a, b) = (x[2i], x[2i+1]);
    "halves" (a, b) = (x[i], x[i + hd/2])."""
    ang = pos[:, None].astype(np.float64) * inv_freq[None, :]         # [T, hd/2]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]       # [T, 1, hd/2]
    out = np.empty_like(x)
    if pairs == "adjacent":
        a, b = x[..., 0::2], x[..., 1::2]
        out[..., 0::2] = a * cos - b * sin
        out[..., 1::2] = a * sin + b * cos
    else:
        h = x.shape[-1] // 2
        a, b = x[..., :h], x[..., h:]
        out[..., :h] = a * cos - b * sin
        out[..., h:] = a * sin + b * cos
    return out


def silu(x):
    return x / (1.0 + np.exp(-x))


def new_cache(m):
    """Per layer: keys and values so far, [S, KV, hd] each."""
    return [{"k": np.zeros((0, m.n_kv, m.head_dim)), "v": np.zeros((0, m.n_kv, m.head_dim))}
            for _ in range(m.n_layers)]


def forward(m, ids, cache, rope_pairs=None):
    """Run the tokens `ids` (continuing whatever `cache` holds) and return their logits [T, V].
    rope_pairs overrides the model's pairing (only for negative-control tests)."""
    pairs = rope_pairs or m.rope_pairs
    T = len(ids)
    start = cache[0]["k"].shape[0]
    pos = np.arange(start, start + T)                                  # [T]
    H, KV, hd = m.n_heads, m.n_kv, m.head_dim
    group = H // KV                                                    # query heads per kv head
    x = m.w["embed"][np.asarray(ids)]                                  # [T, D]
    for L, c in zip(m.layers, cache):
        # --- attention
        h = rms_norm(x, L["attn_norm"], m.eps)                         # [T, D]
        q = (h @ L["wq"].T).reshape(T, H, hd)                          # [T, H, hd]
        k = (h @ L["wk"].T).reshape(T, KV, hd)                         # [T, KV, hd]
        v = (h @ L["wv"].T).reshape(T, KV, hd)                         # [T, KV, hd]
        if m.qk_norm:                                                  # qwen3: per-head RMSNorm
            q = rms_norm(q, L["q_norm"], m.eps)
            k = rms_norm(k, L["k_norm"], m.eps)
        q = rope(q, pos, m.inv_freq, pairs)
        k = rope(k, pos, m.inv_freq, pairs)
        c["k"] = np.concatenate([c["k"], k])                           # [S, KV, hd]
        c["v"] = np.concatenate([c["v"], v])
        S = c["k"].shape[0]
        kk = np.repeat(c["k"], group, axis=1)                          # [S, H, hd]: q head j uses kv head j // group
        vv = np.repeat(c["v"], group, axis=1)
        scores = np.einsum("thd,shd->hts", q, kk) / math.sqrt(hd)      # [H, T, S]
        key_pos = np.arange(S)
        scores = np.where(key_pos[None, None, :] <= pos[None, :, None], scores, -np.inf)
        scores = scores - scores.max(axis=-1, keepdims=True)
        p = np.exp(scores)
        p = p / p.sum(axis=-1, keepdims=True)                          # softmax over keys
        att = np.einsum("hts,shd->thd", p, vv).reshape(T, H * hd)      # [T, H*hd]
        x = x + att @ L["wo"].T                                        # [T, D]
        # --- SwiGLU feed-forward
        h = rms_norm(x, L["ffn_norm"], m.eps)                          # [T, D]
        g = silu(h @ L["w_gate"].T) * (h @ L["w_up"].T)                # [T, F]
        x = x + g @ L["w_down"].T                                      # [T, D]
    x = rms_norm(x, m.w["norm"], m.eps)                                # [T, D]
    return x @ m.w["lm_head"].T                                        # [T, V]


def run(m, ids, n_greedy=0, stop_at_eos=False, rope_pairs=None):
    """Returns (logits of every prompt position [T, V], greedy continuation ids)."""
    cache = new_cache(m)
    logits = forward(m, ids, cache, rope_pairs)
    out = []
    last = logits[-1]
    for _ in range(n_greedy):
        t = int(np.argmax(last))                                       # first max = lowest id
        out.append(t)
        if stop_at_eos and m.eos is not None and t == m.eos:
            break
        last = forward(m, [t], cache, rope_pairs)[-1]
    return logits, out


def parse_ids(s):
    try:
        ids = [int(t) for t in s.replace(" ", "").split(",") if t != ""]
    except ValueError:
        raise SystemExit(f"--ids: {s!r} is not a comma-separated list of integers")
    if not ids:
        raise SystemExit("--ids is empty")
    return ids


def write_f32(path, a):
    from rlxmodel.io import write_bytes_atomic
    write_bytes_atomic(path, np.ascontiguousarray(a, dtype="<f4").tobytes())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weights", required=True, help="a .gguf file or a Hugging Face model directory")
    ap.add_argument("--ids", required=True, help="comma-separated prompt token ids")
    ap.add_argument("--logits-out", help="last position's logits, raw little-endian f32")
    ap.add_argument("--all-logits-out", help="all prompt positions' logits [n_ids, vocab], raw LE f32")
    ap.add_argument("--greedy", type=int, default=0, metavar="N", help="print N greedy token ids")
    ap.add_argument("--stop-at-eos", action="store_true", help="end the greedy continuation at EOS")
    ap.add_argument("--rope-pairs", choices=["adjacent", "halves"], help=argparse.SUPPRESS)
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)

    m = load(args.weights)
    ids = parse_ids(args.ids)
    bad = [i for i in ids if not 0 <= i < m.vocab]
    if bad:
        raise SystemExit(f"--ids: {bad} out of range for vocab {m.vocab}")
    logits, greedy = run(m, ids, args.greedy, args.stop_at_eos, args.rope_pairs)
    if args.logits_out:
        write_f32(args.logits_out, logits[-1])
    if args.all_logits_out:
        write_f32(args.all_logits_out, logits)
    if args.greedy:
        print(" ".join(str(t) for t in greedy))
    if not args.quiet:
        top = np.argsort(-logits[-1], kind="stable")[:5]
        print(f"reference: {m.source} {m.arch}, {len(ids)} ids, vocab {m.vocab}, rope {m.rope_pairs}, "
              f"top5 " + " ".join(f"{t}:{logits[-1][t]:.5f}" for t in top), file=sys.stderr)
    return logits, greedy


if __name__ == "__main__":
    main()
