#!/usr/bin/env python3
"""Limits and interruption through the CLI, on a small random GGUF model:

- a prompt longer than --max-seq is an error naming --max-seq, before anything is generated;
- a generation that fills the KV cache stops with a warning naming --max-seq and still prints
  its timing line (exit 0);
- a --max-seq whose KV cache cannot be allocated names the device and the bytes asked for, and
  one whose size overflows is refused (no crash either way);
- Ctrl-C (SIGINT) during generation stops it: the timing line is printed, exit status 130;
- a truncated GGUF is an error naming the file.

usage: limits.py --rlx PATH --work DIR
Ends with 'N passed, M failed'; exit 1 if any failed."""
import os
import re
import signal
import subprocess
import sys
import time

import harness



def run(exe, args):
    return subprocess.run([exe] + args, capture_output=True, timeout=120)


def main():
    a = harness.parse_args()
    model = harness.test_model(a.work, "limits.gguf", "--family", "llama32", "--dim", "64",
                               "--layers", "1", "--heads", "2", "--kv-heads", "1", "--ffn", "128",
                               "--vocab", "512", "--seed", "7")
    w = ["run", "--weights", model, "--temperature", "0", "--ignore-eos"]
    checks = []

    out = run(a.rlx, w + ["--prompt-ids", "1,2,3,4,5", "--max-seq", "4"])
    err = out.stderr.decode()
    checks.append(("prompt longer than --max-seq: error before generating",
                   out.returncode == 1 and "raise --max-seq" in err and "5 tokens" in err
                   and out.stdout == b""))

    out = run(a.rlx, w + ["--prompt-ids", "1,2,3", "--max-seq", "6", "--max-tokens", "10"])
    lines = out.stdout.decode().splitlines()
    checks.append(("a full context stops generation with a warning and the timing line",
                   out.returncode == 0 and len(lines) == 2 and len(lines[0].split()) == 4
                   and lines[1].startswith("timing:") and "context is full" in
                   out.stderr.decode() and "--max-seq" in out.stderr.decode()))

    out = run(a.rlx, w + ["--prompt-ids", "1", "--max-seq", "100000000000"])
    err = out.stderr.decode()
    checks.append(("an impossible KV cache names the device and the bytes",
                   out.returncode == 1 and "cpu:0: out of memory" in err
                   and re.search(r"asked for \d+ bytes", err) is not None
                   and "lower --max-seq" in err))
    out = run(a.rlx, w + ["--prompt-ids", "1", "--max-seq", "100000000000000000"])
    checks.append(("a KV cache size that overflows is refused",
                   out.returncode == 1 and "overflows" in out.stderr.decode()))

    # Ctrl-C: wait for the first generated ids, then SIGINT.
    p = subprocess.Popen([a.rlx] + w + ["--prompt-ids", "1,2,3", "--max-seq", "400000",
                                        "--max-tokens", "399000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = p.stdout.read(8)
    time.sleep(0.2)
    p.send_signal(signal.SIGINT)
    try:
        rest, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        rest, err = p.communicate()
    text = (first + rest).decode()
    checks.append(("Ctrl-C stops generation, prints the timing line, exits 130",
                   p.returncode == 130 and "\ntiming:" in text and "Ctrl-C" in err.decode()))

    with open(model, "rb") as f:
        data = f.read()
    cut = os.path.join(a.work, "truncated.gguf")
    with open(cut, "wb") as f:
        f.write(data[:len(data) // 2])
    out = run(a.rlx, ["run", "--weights", cut, "--prompt-ids", "1"])
    err = out.stderr.decode()
    checks.append(("a truncated GGUF is an error naming the file",
                   out.returncode == 1 and cut in err and "truncated" in err))

    return harness.report(checks)


if __name__ == "__main__":
    sys.exit(main())
