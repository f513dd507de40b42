#!/usr/bin/env python3
"""Text in / text out through the CLI on a small random model with its own byte-level BPE
vocabulary (scripts/make_test_model.py writes tokenizer.ggml.* into the GGUF):

- `rlx tokenize` and `rlx tokenize --decode` round-trip text;
- `rlx run --prompt TEXT` prints exactly the text of the ids that `--prompt-ids` (the same
  prompt, tokenized with BOS) generates, greedily;
- `rlx chat` answers two turns from stdin (the KV-cache reuse between turns is a unit test);
- bad input is an error naming the flag.

usage: text_mode.py --rlx PATH --work DIR
Ends with 'N passed, M failed'; exit 1 if any failed."""
import json
import subprocess
import sys

import harness



def rlx(exe, args, stdin="", check=True):
    out = subprocess.run([exe] + args, input=stdin.encode(), capture_output=True, timeout=120)
    if check and out.returncode != 0:
        raise RuntimeError(f"rlx {' '.join(args)} failed:\n{out.stderr.decode(errors='replace')}")
    return out


def main():
    a = harness.parse_args()
    checks = []
    for fam in ("llama32", "qwen3"):
        model = harness.test_model(a.work, f"text-{fam}.gguf", "--family", fam, "--dim", "64",
                                   "--layers", "1", "--heads", "2", "--kv-heads", "1", "--ffn",
                                   "128", "--vocab", "512", "--seed", "5")
        w = ["--weights", model]
        text = "Hello there, hello world 123!"
        ids = json.loads(rlx(a.rlx, ["tokenize"] + w, text).stdout)
        back = rlx(a.rlx, ["tokenize", "--decode"] + w, json.dumps(ids)).stdout.decode()
        checks.append((f"{fam}: tokenize / --decode round-trip", back == text and len(ids) > 0))

        bos = json.loads(rlx(a.rlx, ["tokenize", "--add-bos"] + w, text).stdout)
        gen = ["--max-tokens", "12", "--temperature", "0", "--ignore-eos"]
        out = rlx(a.rlx, ["run"] + w + gen + ["--prompt-ids", ",".join(map(str, bos))]).stdout
        got_ids = [int(t) for t in out.decode().splitlines()[0].split()]
        want = rlx(a.rlx, ["tokenize", "--decode"] + w, json.dumps(got_ids)).stdout.decode()
        out = rlx(a.rlx, ["run"] + w + gen + ["--prompt", text]).stdout.decode(errors="strict")
        got = out[:out.rfind("timing:")].rstrip("\n")
        checks.append((f"{fam}: run --prompt prints the text of the same greedy ids",
                       got == want.rstrip("\n")))

        chat = rlx(a.rlx, ["chat"] + w + ["--max-tokens", "6", "--temperature", "0",
                                          "--system", "Be brief.", "--log-level", "info"],
                   "Hi\nAnd again?\n")
        err = chat.stderr.decode()
        turns = [l for l in err.splitlines() if "turn:" in l]
        checks.append((f"{fam}: chat answers two turns", len(turns) == 2))

    bad = rlx(a.rlx, ["run", "--weights", model, "--prompt", "x", "--prompt-ids", "1"], check=False)
    checks.append(("--prompt with --prompt-ids is an error naming both",
                   bad.returncode != 0 and b"--prompt-ids" in bad.stderr))
    bad = rlx(a.rlx, ["tokenize", "--decode", "--weights", model], "[1, \"x\"]", check=False)
    checks.append(("--decode with a non-integer id names it",
                   bad.returncode != 0 and b"not an integer id" in bad.stderr))

    return harness.report(checks)


if __name__ == "__main__":
    sys.exit(main())
