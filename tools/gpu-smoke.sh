#!/usr/bin/env bash
# GPU smoke test: the real GPU servers behind `gate score`, which CPU-only CI cannot start.
#
#   1. vLLM (GPU build) + LoRA adapter + hermes tool parser: the tiny Llama with its LoRA on the tool-call scorecard;
#   2. vLLM + hermes on the trained tool-call model (the parser really parses calls: exit 0 expected);
#   3. SGLang + LoRA adapter + hermes tool parser: the tiny Llama with its LoRA on the same scorecard.
#
# Each step is one `gate score` run recorded in one DuckDB file, then checked there (status complete, the engine's
# name and version, the adapter's hash). Models are the repository's own fixtures (built offline, no hub).
#
# Usage: bash tools/gpu-smoke.sh            (from anywhere; needs `make install` first)
# Env:   OUT (default gate-report/gpu-smoke), VLLM_GPU_VENV (.venv-vllm-gpu), SGLANG_GPU_VENV (.venv-sglang-gpu),
#        LIMIT (items per run, default 8). The two server venvs are built on first use (pinned versions below).
# Exit:  0 every step passed, 1 a step failed or this machine has no GPU (one line on stderr).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() { echo "gpu-smoke: $*" >&2; exit 1; }

shopt -s nullglob
gpus=(/dev/nvidia[0-9]*)
shopt -u nullglob
if [[ ${#gpus[@]} -eq 0 && ! -e /dev/kfd ]] || [[ "${CUDA_VISIBLE_DEVICES-unset}" == "" ]] \
   || [[ "${CUDA_VISIBLE_DEVICES-unset}" == "-1" ]]; then
  die "no GPU on this machine (no /dev/nvidiaN or /dev/kfd, or CUDA_VISIBLE_DEVICES hides them): nothing run"
fi

PYTHON=.venv/bin/python
[[ -x "$PYTHON" ]] || die "no .venv (run make install first)"
OUT=${OUT:-gate-report/gpu-smoke}
LIMIT=${LIMIT:-8}
VLLM_GPU_VENV=${VLLM_GPU_VENV:-.venv-vllm-gpu}
SGLANG_GPU_VENV=${SGLANG_GPU_VENV:-.venv-sglang-gpu}
VLLM_VERSION=0.33.0
SGLANG_VERSION=0.5.23
SCORECARD=tests/serve/toolcall/scorecard.yaml
DB="$OUT/gpu-smoke.duckdb"

venv() {  # venv DIR SPEC...: build a server venv once (a stamp file, like the Makefile's)
  local dir=$1
  shift
  [[ -f "$dir/.installed" ]] && return 0
  echo "gpu-smoke: building $dir ($*)"
  python3 -m venv "$dir"
  "$dir/bin/pip" install -q --disable-pip-version-check -U pip
  "$dir/bin/pip" install -q --disable-pip-version-check "$@" || die "could not install $* into $dir"
  touch "$dir/.installed"
}

venv "$VLLM_GPU_VENV" "vllm==$VLLM_VERSION"
venv "$SGLANG_GPU_VENV" "sglang[all]==$SGLANG_VERSION"

mkdir -p "$OUT"
rm -f "$DB"
read -r TINY LORA TOOLCALL < <("$PYTHON" -c '
from fixtures.build_tiny_model import build
from fixtures.build_toolcall_model import build as build_toolcall
m, a = build()
print(m, a, build_toolcall())')
[[ -d "$TINY" && -d "$LORA" && -d "$TOOLCALL" ]] || die "fixture models were not built"

score() {  # score NAME EXPECTED_CODES GATE_SCORE_ARGS...: one recorded run; its exit code must be in EXPECTED
  local name=$1 expected=$2 code=0
  shift 2
  echo "gpu-smoke: $name"
  "$PYTHON" -m gate score "$@" --scorecard "$SCORECARD" --limit "$LIMIT" --db "$DB" -o "$OUT/$name" \
    >"$OUT/$name.log" 2>&1 || code=$?
  [[ " $expected " == *" $code "* ]] || die "$name: gate score exited $code (log $OUT/$name.log: $(tail -n 1 "$OUT/$name.log"))"
  [[ -s "$OUT/$name/scores.json" ]] || die "$name: no scores.json"
}

export GATE_VLLM_PYTHON="$VLLM_GPU_VENV/bin/python"
export GATE_SGLANG_PYTHON="$SGLANG_GPU_VENV/bin/python"
# 0 = scored (target check ran); 100 = scored, the random tiny model fails the scorecard's targets: both are runs
score vllm-lora-tools "0 100" "$TINY" --engine vllm --adapter "$LORA" --tool-parser hermes
score vllm-toolcall "0" "$TOOLCALL" --engine vllm --tool-parser hermes
score sglang-lora "0 100" "$TINY" --engine sglang --adapter "$LORA" --tool-parser hermes

"$PYTHON" - "$DB" <<'EOF' || die "the record does not show three complete GPU runs"
import sys

import duckdb

rows = duckdb.connect(sys.argv[1], read_only=True).execute(
    "SELECT engine, status, items, errors FROM score_runs ORDER BY started_at").fetchall()
print("gpu-smoke: runs", rows)
assert [r[0] for r in rows] == ["vllm", "vllm", "sglang"], rows
assert all(r[1] == "complete" and r[2] > 0 and not r[3] for r in rows), rows
EOF
echo "gpu-smoke: passed (reports under $OUT)"
