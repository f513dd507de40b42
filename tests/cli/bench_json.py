#!/usr/bin/env python3
"""`rlx bench --output json` keeps the llama-bench record contract that
../shared/bench/compare.py reads: a list of records with n_prompt, n_gen, avg_ts, stddev_ts and
samples_ts (one per rep), pp as n_gen=0 and tg as n_prompt=0; and the markdown table prints.

usage: bench_json.py --rlx PATH --work DIR [--device D]; ends with 'N passed, M failed'."""
import json
import subprocess
import sys

import harness



def main():
    a = harness.parse_args(("--device", "cpu"))
    model = harness.test_model(a.work, "bench-qwen3-q8_0.gguf", "--family", "qwen3", "--dtype",
                               "q8_0", "--dim", "64", "--layers", "2", "--heads", "2",
                               "--kv-heads", "1", "--head-dim", "32", "--ffn", "128", "--vocab",
                               "320")
    base = [a.rlx, "bench", "--weights", model, "--device", a.device, "--pp", "8", "--tg", "4",
            "--reps", "3", "--threads", "2"]
    checks = []
    r = subprocess.run(base + ["--output", "json"], capture_output=True, text=True, timeout=300)
    checks.append(("json run exits 0", r.returncode == 0))
    try:
        recs = json.loads(r.stdout)
    except ValueError:
        recs = []
    checks.append(("stdout is a JSON list of 2 records", isinstance(recs, list) and len(recs) == 2))
    if len(recs) == 2:
        pp, tg = recs
        checks.append(("pp record: n_prompt 8, n_gen 0", pp["n_prompt"] == 8 and pp["n_gen"] == 0))
        checks.append(("tg record: n_prompt 0, n_gen 4", tg["n_prompt"] == 0 and tg["n_gen"] == 4))
        for rec in recs:
            ok = (len(rec["samples_ts"]) == 3 and all(s > 0 for s in rec["samples_ts"])
                  and abs(rec["avg_ts"] - sum(rec["samples_ts"]) / 3) < 1e-3 * rec["avg_ts"] + 1e-3
                  and rec["stddev_ts"] >= 0 and rec["n_threads"] == 2 and rec["model_size"] > 0
                  and rec["n_params"] > 0 and rec["backend"] == a.device.split(":")[0])
            checks.append((f"{rec['test']}: samples, mean, sd and metadata consistent", ok))
    md = subprocess.run(base, capture_output=True, text=True, timeout=300)
    checks.append(("markdown table", md.returncode == 0 and "| pp8 |" in md.stdout
                   and "| tg4 |" in md.stdout))
    bad = subprocess.run(base + ["--output", "xml"], capture_output=True, text=True, timeout=60)
    checks.append(("--output xml is refused", bad.returncode != 0 and "xml" in bad.stderr))
    return harness.report(checks)


if __name__ == "__main__":
    sys.exit(main())
