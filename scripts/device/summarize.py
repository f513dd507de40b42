#!/usr/bin/env python3
"""The one markdown table of scripts/device-check.sh (standard library only).

Reads the work folder the script wrote: steps.tsv (id, label, status, seconds, detail),
bandwidth.txt (bandwidth.<key>=<value> lines of scripts/device/bandwidth.cu) and bench-<model>.json
(`rlx bench --output json` records), and prints the table: one row per step; bench rows also
carry the weight bytes (sum of the GGUF's tensor bytes: what one decoded token reads, the tied
embedding included as the output matrix), pp and tg tokens/s, decode GB/s = weight bytes x tg
tokens/s, and that as a share of the measured streaming-read bandwidth. A last row says whether
the goal (decode >= 70% of read bandwidth on the 1B Q4_K model) is met.
"""
import argparse
import datetime
import json
import os

GOAL = 0.70


def read_bandwidth(path):
    bw = {}
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("bandwidth.") and "=" in line:
                    k, v = line[len("bandwidth."):].rstrip("\n").split("=", 1)
                    bw[k] = v
    except OSError:
        pass
    return bw


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def cell(s):
    return str(s).replace("|", "/").strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--total", default="?")
    ap.add_argument("--budget", default="?")
    ap.add_argument("--quick", default="0")
    ap.add_argument("--goal-model", default="llama-1b-q4_k")
    a = ap.parse_args()

    bw = read_bandwidth(os.path.join(a.work, "bandwidth.txt"))
    read_gbs = num(bw.get("read_gbs"))
    steps = []
    with open(a.steps) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 4:
                steps.append((parts + [""])[:5])

    gpu = bw.get("device", "")
    mode = "quick" if a.quick == "1" else "full"
    when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    print(f"## rlx device check: {a.device}{' on ' + gpu if gpu else ''} ({mode}, {when}), "
          f"total {a.total} s of a {a.budget} s budget")
    print()
    if bw:
        peak = bw.get("peak_gbs")
        print(f"Bandwidth ({bw.get('buffer_gib', '?')} GiB, median of {bw.get('reps', '?')}): "
              f"streaming read {bw.get('read_gbs', '?')} GB/s, D2D copy {bw.get('copy_gbs', '?')} GB/s "
              f"read+write ({bw.get('copy_read_gbs', '?')} GB/s read), write {bw.get('write_gbs', '?')} GB/s"
              + (f", memory clock x bus peak {peak} GB/s" if peak else "")
              + f"; {bw.get('sms', '?')} SMs, L2 {bw.get('l2_mib', '?')} MiB. "
              "Decode % = weight bytes x tg tok/s / streaming read.")
        print()
    hdr = ["step", "status", "s", "detail", "weights MB", "pp t/s", "tg t/s", "decode GB/s", "% of read BW"]
    print("| " + " | ".join(hdr) + " |")
    print("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    goal_pct = None
    goal_seen = False
    for sid, label, status, secs, detail in steps:
        extra = [""] * 5
        if sid.startswith("bench-"):
            model = sid[len("bench-"):]
            try:
                with open(os.path.join(a.work, f"bench-{model}.json")) as f:
                    recs = json.load(f)
            except (OSError, ValueError):
                recs = []
            pp = next((r for r in recs if r.get("n_gen") == 0), None)
            tg = next((r for r in recs if r.get("n_prompt") == 0), None)
            size = next((r.get("model_size") for r in recs if r.get("model_size")), None)
            if recs:
                detail = (f"{pp['test'] if pp else ''} {tg['test'] if tg else ''}".strip()
                          + f", {len((tg or pp)['samples_ts'])} reps, packed {str((tg or pp).get('packed')).lower()}")
            if size:
                extra[0] = f"{size / 1e6:.0f}" if size >= 1e7 else f"{size / 1e6:.2f}"
            if pp:
                extra[1] = f"{pp['avg_ts']:.1f} ± {pp['stddev_ts']:.1f}"
            if tg:
                extra[2] = f"{tg['avg_ts']:.1f} ± {tg['stddev_ts']:.1f}"
                if size:
                    dec = size * tg["avg_ts"] / 1e9
                    extra[3] = f"{dec:.0f}" if dec >= 10 else f"{dec:.3f}"
                    if read_gbs:
                        pct = 100 * dec / read_gbs
                        extra[4] = f"{pct:.1f}%"
                        if model == a.goal_model:
                            goal_pct = pct
            if model == a.goal_model:
                goal_seen = True
        print("| " + " | ".join(cell(c) for c in [label, status, secs, detail] + extra) + " |")
    if goal_seen or read_gbs:
        if goal_pct is None:
            verdict, note = "n/a", "needs the bandwidth step and the bench of " + a.goal_model
        else:
            verdict = "MET" if goal_pct >= 100 * GOAL else "NOT MET"
            note = f"{goal_pct:.1f}% of {read_gbs:.0f} GB/s"
        print(f"| goal: {a.goal_model} decode >= {100 * GOAL:.0f}% of read BW | {verdict} |  | {note} "
              "|  |  |  |  |  |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
