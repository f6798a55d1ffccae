#!/usr/bin/env bash
# Here, after the device run: unpack each NAME.tar.gz the device returned into runs/issue35-gpu/
# and evaluate the adapters one after another on this 2-core CPU, beside today's default.
#
#   reports/issue35-gpu/evaluate.sh ACEBENCH_DIR TARS...        # e.g. /work/.device/…/smollm2.tar.gz
#
# Per model (--model runs/issue35-gpu/NAME), results in runs/issue35-gpu/eval/NAME/:
#   worlds   190 held-out tasks (issue 35 target ≥ 80%), about 40 min
#   bfcl     simple_python, multiple, parallel, live_simple, irrelevance, 50 items each, about 35 min
#   acebench the EN normal and special slice the reports use (--limit 5), about 20 min
# QUICK=1 runs one item of each (the CPU check of this script). Gemma needs `pip install -e '.[bases]'`.
# Compare per item with today's default: reports/bfcl-whole-embedded/, reports/acebench-embedded/.
set -euo pipefail
ACEBENCH=${1:?ACEBench folder}
shift
cd "$(git rev-parse --show-toplevel)"
BOTPSY=${BOTPSY:-.venv/bin/botpsy}
R=runs/issue35-gpu
DOMAIN=all N=10 LIMIT=50 ACE=5
if [ -n "${QUICK:-}" ]; then DOMAIN=calendar N=1 LIMIT=1 ACE=1; fi
export OMP_NUM_THREADS=2
mkdir -p $R/eval
for tar in "$@"; do
  name=$(basename "$tar" .tar.gz)
  tar xzf "$tar" -C $R
  [ -f $R/$name/adapter.gguf ] || { echo "error: $tar holds no $name/adapter.gguf (see $R/$name.log)" >&2; exit 2; }
  E=$R/eval/$name
  echo "== $name: $(tr -d '\n ' < $R/$name/train_summary.json)"
  $BOTPSY eval worlds --model $R/$name --domain $DOMAIN --n $N --seed 1000 --threads 2 --out $E/worlds --json | tail -n 1
  $BOTPSY eval bfcl --model $R/$name --categories simple_python,multiple,parallel,live_simple,irrelevance \
    --limit $LIMIT --threads 2 --out $E/bfcl --json | tail -n 1
  $BOTPSY eval acebench --data "$ACEBENCH" --model $R/$name --threads 2 --categories normal,special \
    --limit $ACE --out $E/acebench --json | tail -n 1
done
