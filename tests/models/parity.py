#!/usr/bin/env python3
"""Logit parity of `rlx run` against the float64 numpy reference (scripts/reference.py).

  parity.py --rlx PATH/TO/rlx --work DIR [--quick] [--only SUBSTRING] [--timeout S]
            [--device DEV]

Writes tiny synthetic models into DIR/models (scripts/make_test_model.py; both families:
llama32 and qwen3; GGUF in every supported dtype, safetensors in f32 and bf16), runs

  rlx run --weights M --device DEV --prompt-ids IDS --max-tokens N --logits-out F --seed 0 --temperature 0

and checks, one line per check:
  <model> logits     rel-RMS(rlx, reference) of the last prompt position's logits, where the
                     reference decodes the very same stored blocks: f32 <= 1e-4,
                     f16/bf16 <= 2e-3, quantized <= 1e-3
  <model> greedy     (f32 models) the greedy ids rlx prints equal the reference's
  <family> gguf-vs-safetensors <dtype>   rlx's logits on the GGUF and on the safetensors copy of
                     the same weights agree within the f32 threshold (and greedy ids, for f32)
Ends with "N passed, M failed" on its own line; exits 1 if any check failed.
rlx's stdout: generated ids separated by spaces/newlines, then a line starting with "timing:".
"""

import argparse
import os
import re
import subprocess
import sys
import time

sys.dont_write_bytecode = True   # keep the source tree free of __pycache__
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
from rlxmodel.env import ensure_numpy  # noqa: E402

ensure_numpy()

import numpy as np  # noqa: E402

import make_test_model as mk  # noqa: E402
import reference as ref  # noqa: E402

PROMPT = [1, 17, 42, 300, 5, 99, 256, 7, 123, 64, 3, 200]
N_GEN = 8
THRESH = {"f32": 1e-4, "f16": 2e-3, "bf16": 2e-3}
THRESH_QUANT = 1e-3
# Tiny shapes. std 0.1 keeps greedy continuations varied (0.02 tends to repeat one token);
# llama32 uses a small rope theta and original context so that Llama-3 rope scaling changes
# the logits a lot within the first 20 positions.
SHAPE = {
    "llama32": ["--dim", "256", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--ffn", "512",
                "--vocab", "512", "--std", "0.1", "--rope-theta", "10000", "--rope-scaling", "8,1,4,32",
                "--tied"],
    "qwen3": ["--dim", "256", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--head-dim", "128",
              "--ffn", "512", "--vocab", "512", "--std", "0.1", "--untied"],
}
ALL_GGUF = ["f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k"]
QUICK_GGUF = ["f32", "bf16", "q8_0", "q4_0", "q4_k", "q6_k"]
ALL_ST = ["f32", "bf16"]
QUICK_ST = ["f32"]

results = []


def report(name, ok, detail):
    results.append(bool(ok))
    print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}", flush=True)


def rel_rms(a, b):
    den = np.sqrt(np.mean(b.astype(np.float64) ** 2))
    return float(np.sqrt(np.mean((a.astype(np.float64) - b) ** 2)) / den) if den > 0 else float("inf")


def parse_ids(stdout):
    """Generated ids: every all-digit token before the first line starting with 'timing:'."""
    ids = []
    for line in stdout.splitlines():
        if line.strip().startswith("timing:"):
            break
        ids += [int(t) for t in re.split(r"[\s,]+", line.strip()) if t.isdigit()]
    return ids


def greedy_matches(got, want, eos):
    """rlx may stop early at EOS: accept a prefix of the reference that ends at (or just
    before) an EOS the reference produced."""
    if got == want:
        return True, ""
    n = len(got)
    if n < len(want) and got == want[:n] and eos is not None and (
            (n > 0 and got[-1] == eos) or want[n] == eos):
        return True, f" (stopped at EOS {eos})"
    return False, ""


def run_rlx(rlx, model, out, timeout, extra, device="cpu"):
    cmd = [rlx, "run", "--weights", model, "--device", device, "--prompt-ids", ",".join(map(str, PROMPT)),
           "--max-tokens", str(N_GEN), "--logits-out", out, "--seed", "0", "--temperature", "0"] + extra
    if os.path.exists(out):
        os.unlink(out)
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, f"timed out after {timeout}s: {' '.join(cmd)}"
    except OSError as e:
        return None, None, f"cannot run {rlx}: {e}"
    dt = time.time() - t0
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        return None, None, f"exit {r.returncode} in {dt:.1f}s: {' | '.join(tail)}"
    if not os.path.exists(out):
        return None, None, "no --logits-out file written"
    return np.fromfile(out, dtype="<f4"), parse_ids(r.stdout), f"{dt:.1f}s"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", required=True, help="the rlx executable")
    ap.add_argument("--work", required=True, help="folder for models and outputs (created)")
    ap.add_argument("--quick", action="store_true", help=f"GGUF {', '.join(QUICK_GGUF)}; safetensors f32")
    ap.add_argument("--only", default="", help="run only models whose name contains this")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per rlx run")
    ap.add_argument("--quant-thresh", type=float, default=THRESH_QUANT,
                    help=f"rel-RMS limit for block-quantized models (default {THRESH_QUANT:g}; "
                         "int8-activation kernels land near 3e-2 on these tiny models)")
    ap.add_argument("--device", default="cpu", help="the device rlx runs on (default cpu), e.g. vulkan")
    ap.add_argument("--rlx-arg", action="append", default=[],
                    help="extra argument for every rlx run (repeatable), e.g. --rlx-arg=--packed")
    args = ap.parse_args()
    rlx = os.path.abspath(args.rlx) if os.path.exists(args.rlx) else args.rlx
    mdir = os.path.join(args.work, "models")
    odir = os.path.join(args.work, "out")
    os.makedirs(mdir, exist_ok=True)
    os.makedirs(odir, exist_ok=True)
    gguf_types = QUICK_GGUF if args.quick else ALL_GGUF
    st_types = QUICK_ST if args.quick else ALL_ST
    t_start = time.time()

    for fam in ("llama32", "qwen3"):
        rlx_out = {}                                     # (format, dtype) -> (logits, ids)
        jobs = [("gguf", d) for d in gguf_types] + [("safetensors", d) for d in st_types]
        for fmt, dtype in jobs:
            name = f"{fam}-{dtype}" + (".gguf" if fmt == "gguf" else "-st")
            if args.only and args.only not in name:
                continue
            path = os.path.join(mdir, name)
            try:
                mk.main(["--family", fam, "--format", fmt, "--dtype", dtype, "--out", path,
                         "--seed", "1", "--quiet"] + SHAPE[fam])
            except SystemExit as e:
                report(f"{name} make", False, f"make_test_model failed: {e}")
                continue
            m = ref.load(path)
            ref_logits, ref_ids = ref.run(m, PROMPT, N_GEN)
            ref_last = ref_logits[-1]

            got, ids, info = run_rlx(rlx, path, os.path.join(odir, name + ".f32"), args.timeout,
                                     args.rlx_arg, args.device)
            if got is None:
                report(f"{name} run", False, info)
                continue
            if got.shape != ref_last.shape:
                report(f"{name} logits", False, f"{got.size} values, expected {ref_last.size} (vocab)")
                continue
            thr = THRESH.get(dtype, args.quant_thresh)
            e = rel_rms(got, ref_last)
            top = f"top1 rlx {int(np.argmax(got))} ref {int(np.argmax(ref_last))}"
            ok = bool(np.isfinite(e)) and e <= thr
            report(f"{name} logits", ok, f"rel-RMS {e:.3e} (<= {thr:g}), {top}, rlx {info}")
            if dtype == "f32":
                ok, note = greedy_matches(ids, ref_ids, m.eos)
                report(f"{name} greedy", ok, f"rlx {ids} reference {ref_ids}{note}")
            rlx_out[(fmt, dtype)] = (got, ids)

        for dtype in st_types:
            a, b = rlx_out.get(("gguf", dtype)), rlx_out.get(("safetensors", dtype))
            if a is None or b is None:
                continue
            e = rel_rms(a[0], b[0])
            ok = e <= THRESH["f32"]
            detail = f"rlx logits rel-RMS {e:.3e} (<= {THRESH['f32']:g})"
            if dtype == "f32":
                ok = ok and a[1] == b[1]
                detail += f", greedy gguf {a[1]} safetensors {b[1]}"
            report(f"{fam} gguf-vs-safetensors {dtype}", ok, detail)

    n_ok = sum(results)
    sys.stdout.flush()
    print(f"[parity: {len(results)} checks in {time.time() - t_start:.1f}s, work dir {args.work}]",
          file=sys.stderr, flush=True)
    print(f"{n_ok} passed, {len(results) - n_ok} failed", flush=True)
    return 0 if results and n_ok == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
