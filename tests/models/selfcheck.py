#!/usr/bin/env python3
"""Self-checks of scripts/make_test_model.py and scripts/reference.py (no rlx needed).

  selfcheck.py [--work DIR] [--llamacpp PATH/TO/ref]

Checks:
  quant <type>          quantize -> dequantize round trip of N(0,1) rows is close (per-type bound)
  same-weights <fam> <dtype>   GGUF and safetensors written with the same seed give the same
                        float64 logits (rel-RMS < 1e-12): names, layouts, the llama q/k row
                        permutation + adjacent-pair rope vs HF halves, rope_freqs vs HF rope_scaling
  quant-vs-f32 <fam> <type>    quantized GGUF logits are near the f32 ones (sanity)
  rope-scaling <fam>    Llama-3 rope scaling on/off changes the logits
  negative <...>        the checks can fail: wrong rope pairing / missing rope_freqs are detected
  llama.cpp <fam> <type>  (with --llamacpp, the bench kit's `ref` driver) llama.cpp loads the GGUF
                        and its logits/greedy agree with the reference
Ends with "N passed, M failed"; exit 1 if any failed.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True   # keep the source tree free of __pycache__
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
from rlxmodel.env import ensure_numpy  # noqa: E402

ensure_numpy()

import numpy as np  # noqa: E402

import make_test_model as mk  # noqa: E402
import reference as ref  # noqa: E402
from rlxmodel.dequantize import dequantize  # noqa: E402
from rlxmodel.quantize import quantize  # noqa: E402

IDS = [1, 17, 42, 300, 5, 99, 256, 7, 123, 64, 3, 200]
SHAPE = {
    "llama32": ["--dim", "256", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--ffn", "512",
                "--vocab", "512", "--std", "0.1", "--rope-theta", "10000", "--rope-scaling", "8,1,4,32"],
    "qwen3": ["--dim", "256", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--head-dim", "128",
              "--ffn", "512", "--vocab", "512", "--std", "0.1", "--untied"],
}
# quantize -> dequantize rel-RMS bounds on N(0,1) data (typical values are ~60% of these)
QUANT_BOUND = {"f32": 0.0, "f16": 1e-3, "bf16": 5e-3, "q8_0": 0.01, "q6_k": 0.03, "q5_0": 0.06,
               "q5_1": 0.06, "q5_k": 0.06, "q4_0": 0.12, "q4_1": 0.12, "q4_k": 0.12, "q3_k": 0.2,
               "q2_k": 0.4}

results = []


def check(name, ok, detail):
    results.append(ok)
    print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}", flush=True)


def rel_rms(a, b):
    return float(np.sqrt(np.mean((a - b) ** 2)) / np.sqrt(np.mean(b ** 2)))


def make(work, fam, fmt, dtype, extra=()):
    out = os.path.join(work, f"{fam}-{dtype}.{'gguf' if fmt == 'gguf' else 'st'}")
    mk.main(["--family", fam, "--format", fmt, "--dtype", dtype, "--out", out, "--seed", "7", "--quiet"]
            + SHAPE[fam] + list(extra))
    return out


def logits(path, **kw):
    return ref.run(ref.load(path), IDS, **kw)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", help="folder for the models (default: a temporary folder)")
    ap.add_argument("--llamacpp", help="the bench kit's llama.cpp driver (RLX_BENCH_DIR/llamacpp/build/ref)")
    args = ap.parse_args()
    tmp = None
    if not args.work:
        tmp = tempfile.TemporaryDirectory(prefix="rlx-selfcheck-")
        args.work = tmp.name
    os.makedirs(args.work, exist_ok=True)
    W = args.work

    # 1. quantizer round trips
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 1024)).astype(np.float32)
    for t, bound in QUANT_BOUND.items():
        y = dequantize(quantize(x, t), t, x.shape)
        e = rel_rms(y, x.astype(np.float64))
        check(f"quant {t}", e <= bound, f"rel-RMS {e:.3e} (bound {bound})")

    for fam in ("llama32", "qwen3"):
        # 2. same seed -> same logits in both formats
        for dt in ("f32", "f16", "bf16"):
            a = logits(make(W, fam, "gguf", dt))
            b = logits(make(W, fam, "safetensors", dt))
            e = rel_rms(a, b)
            check(f"same-weights {fam} {dt}", e < 1e-12, f"GGUF vs safetensors rel-RMS {e:.2e} (< 1e-12)")
        # 3. quantized GGUF near f32. Random 2-layer nets amplify weight noise in the logits
        # (~2-5x the per-weight error), so the bound is 5x the weight-level bound, capped below
        # the distance to an unrelated model (another seed): a broken layout lands near that.
        # Uses the default weight scale (std 0.02), which amplifies less than the 0.1 used above.
        f32 = logits(make(W, fam, "gguf", "f32", ["--std", "0.02"]))
        unrelated = rel_rms(logits(make(W, fam, "gguf", "f32", ["--std", "0.02", "--seed", "8"])), f32)
        for dt in ("q8_0", "q6_k", "q5_k", "q5_1", "q5_0", "q4_k", "q4_1", "q4_0", "q3_k", "q2_k"):
            e = rel_rms(logits(make(W, fam, "gguf", dt, ["--std", "0.02"])), f32)
            bound = min(5 * QUANT_BOUND[dt], 0.85 * unrelated)
            check(f"quant-vs-f32 {fam} {dt}", e < bound,
                  f"rel-RMS {e:.3e} (sanity bound {bound:.3f}; another seed: {unrelated:.3f})")

    # 4. rope scaling on/off changes logits (llama32), for the test shape and Llama 3.2's values
    on = logits(make(W, "llama32", "gguf", "f32"))
    off = logits(make(W, "llama32", "gguf", "f32", ["--rope-scaling", "none"]))
    e = rel_rms(on, off)
    check("rope-scaling llama32 gguf (8,1,4,32)", e > 1e-2, f"on vs off rel-RMS {e:.3e} (> 1e-2)")
    on = logits(make(W, "llama32", "safetensors", "f32"))
    e2 = rel_rms(on, logits(make(W, "llama32", "safetensors", "f32", ["--rope-scaling", "none"])))
    check("rope-scaling llama32 hf (8,1,4,32)", e2 > 1e-2, f"on vs off rel-RMS {e2:.3e} (> 1e-2)")
    d32 = ["--rope-theta", "500000", "--rope-scaling", "32,1,4,8192"]
    on = logits(make(W, "llama32", "gguf", "f32", d32))
    off = logits(make(W, "llama32", "gguf", "f32", ["--rope-theta", "500000", "--rope-scaling", "none"]))
    e = rel_rms(on, off)
    st = logits(make(W, "llama32", "safetensors", "f32", d32))
    check("rope-scaling llama32 (Llama 3.2: 500000, 32,1,4,8192)", e > 1e-9 and rel_rms(st, on) < 1e-12,
          f"on vs off rel-RMS {e:.3e} (small: only positions < 12), GGUF vs HF {rel_rms(st, on):.1e}")

    # 5. negative controls: the comparisons above can fail
    m = ref.load(make(W, "llama32", "gguf", "f32"))
    hf = logits(make(W, "llama32", "safetensors", "f32"))
    e = rel_rms(ref.run(m, IDS, rope_pairs="halves")[0], hf)
    check("negative llama32 gguf with halves rope", e > 1e-3, f"rel-RMS vs HF {e:.3e} (> 1e-3)")
    m.inv_freq = ref.base_inv_freq(10000.0, m.head_dim)          # drop rope_freqs
    e = rel_rms(ref.run(m, IDS)[0], hf)
    check("negative llama32 gguf without rope_freqs", e > 1e-3, f"rel-RMS vs HF {e:.3e} (> 1e-3)")

    # 6. optional: llama.cpp loads the files and agrees
    if args.llamacpp:
        for fam in ("llama32", "qwen3"):
            for dt in ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1",
                       "q2_k", "q3_k", "q4_k", "q5_k", "q6_k"):
                p = make(W, fam, "gguf", dt)
                lg, greedy = ref.run(ref.load(p), IDS, n_greedy=4)
                out = os.path.join(W, "llamacpp.f32")
                r = subprocess.run([args.llamacpp, "--model", p, "--tokens", ",".join(map(str, IDS)),
                                    "--n-gen", "4", "--logits-out", out], capture_output=True, text=True)
                if r.returncode:
                    check(f"llama.cpp {fam} {dt}", False, "ref failed: " + r.stderr.strip()[-300:])
                    continue
                toks = json.loads(r.stdout).get("greedy", {}).get("tokens")
                e = rel_rms(np.fromfile(out, dtype="<f4").astype(np.float64), lg[-1])
                # llama.cpp: f16 KV cache, q8 activations for quantized matmuls -> a few % for quants
                bound = 5e-3 if dt in ("f32", "f16") else 2e-2 if dt == "bf16" else 0.1
                check(f"llama.cpp {fam} {dt}", e < bound,
                      f"rel-RMS {e:.3e} (< {bound}), greedy llama.cpp {toks} reference {greedy}")

    n_ok = sum(results)
    print(f"{n_ok} passed, {len(results) - n_ok} failed")
    return 0 if n_ok == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
