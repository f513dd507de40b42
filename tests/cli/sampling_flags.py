#!/usr/bin/env python3
"""Every sampling flag of `rlx run` must change what is generated (the reference CLI's flags
silently did nothing). Makes one small random model, runs a baseline, then each flag alone.

usage: sampling_flags.py --rlx PATH --work DIR
Ends with 'N passed, M failed'; exit 1 if any failed."""
import subprocess
import sys

import harness



def run(rlx, model, extra):
    cmd = [rlx, "run", "--weights", model, "--prompt-ids", "1,2,3", "--max-tokens", "24",
           "--ignore-eos"] + extra
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr}")
    first = out.stdout.splitlines()[0]
    return [int(t) for t in first.split()]


def main():
    a = harness.parse_args()
    # Larger weights than the default make the distribution peaked enough that top-k/p and
    # min-p cut real candidates, but not so peaked that sampling is greedy.
    model = harness.test_model(a.work, "flags-llama.gguf", "--family", "llama32", "--dim", "64",
                               "--layers", "1", "--heads", "2", "--kv-heads", "1", "--ffn", "128",
                               "--vocab", "320", "--std", "0.25", "--seed", "3")

    base = ["--temperature", "1.0", "--top-k", "0", "--top-p", "1.0", "--min-p", "0",
            "--repeat-penalty", "1.0", "--seed", "11"]

    def with_flag(flag, value):
        args = list(base)
        if flag in args:
            args[args.index(flag) + 1] = value
        else:
            args += [flag, value]
        return args

    checks = []
    baseline = run(a.rlx, model, base)
    checks.append(("same flags reproduce the same tokens", run(a.rlx, model, base) == baseline))
    for flag, value in [("--seed", "12"), ("--temperature", "0.3"), ("--top-k", "3"),
                        ("--top-p", "0.3"), ("--min-p", "0.5"), ("--repeat-penalty", "3.0")]:
        got = run(a.rlx, model, with_flag(flag, value))
        checks.append((f"{flag} {value} changes the output", got != baseline))
    greedy = run(a.rlx, model, with_flag("--temperature", "0"))
    checks.append(("--top-k 1 equals greedy", run(a.rlx, model, with_flag("--top-k", "1")) == greedy))
    checks.append(("greedy ignores the seed",
                   run(a.rlx, model, with_flag("--temperature", "0") + ["--seed", "99"]) == greedy))
    penalized = run(a.rlx, model, with_flag("--temperature", "0") + ["--repeat-penalty", "5"])
    checks.append(("--repeat-penalty changes greedy output", penalized != greedy))

    return harness.report(checks)


if __name__ == "__main__":
    sys.exit(main())
