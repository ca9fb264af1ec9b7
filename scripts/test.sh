#!/usr/bin/env bash
# The README's test command: fresh venv, install, lint, dry runs, pytest, small end-to-end run.
#   bash scripts/test.sh            (FEDCLUST_VENV=... to reuse a venv; FEDCLUST_SKIP_E2E=1 to skip)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${FEDCLUST_VENV:-.venv}
export FEDCLUST_DATA_MIRROR=${FEDCLUST_DATA_MIRROR:-$(cd .. && pwd)/shared/data}
export MPLBACKEND=Agg PYTHONUNBUFFERED=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
step(){ printf '\n== %s (%s)\n' "$*" "$(date +%T)"; }

step "install into $VENV"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q -c .ci/constraints.txt -e ".[test,flower,hdp]"
case "$VENV" in /*) ;; *) VENV="$PWD/$VENV" ;; esac
export PATH="$VENV/bin:$PATH"

step "ruff"
ruff check src scripts tests benchmarks
step "snakemake --lint"
snakemake --lint --cores 1 -q
step "snakefmt --check"
snakefmt --check Snakefile rules/

step "dry runs of every config and the slurm profile"
for cfg in config/*.yaml; do
  [ "$(basename "$cfg")" = schema.yaml ] && continue
  echo "-- $cfg"; snakemake -n --cores 2 -q --configfile "$cfg" >/dev/null
done
snakemake -n -q --profile profiles/slurm --configfile config/thesis.yaml >/dev/null

step "pytest"
pytest -q -p no:cacheprovider

if [ -z "${FEDCLUST_SKIP_E2E:-}" ]; then
  step "end-to-end run of the default config"
  work=$(mktemp -d)
  start=$(date +%s)
  snakemake --cores 2 --directory "$work" -s "$PWD/Snakefile" --configfile "$PWD/config/config.yaml" -q
  echo "default workflow: $(( $(date +%s) - start )) s; report: $work/results/report/index.html"
  test -s "$work/results/report/index.html"
  if python -c "from fedclust.report.browser import find_browser as f; raise SystemExit(f() is None)"; then
    step "the report in headless Chromium (every section rendered, every image loaded)"
    python -m fedclust.report.browser "$work/results/report/index.html"
  fi
  step "snakemake --report of that run"
  snakemake -q --directory "$work" -s "$PWD/Snakefile" --configfile "$PWD/config/config.yaml" \
    --report "$work/report.html"
  test -s "$work/report.html" && echo "snakemake report: $work/report.html"
  # issue 14: config/thesis.yaml's DAG (every rule and fan-out wildcard) at tiny sizes, run
  step "end-to-end run of the thesis smoke config (thesis DAG, tiny sizes)"
  smoke=$(mktemp -d)
  start=$(date +%s)
  snakemake --cores 2 --directory "$smoke" -s "$PWD/Snakefile" \
    --configfile "$PWD/config/thesis-smoke.yaml" -q
  echo "thesis smoke workflow: $(( $(date +%s) - start )) s; report: $smoke/results/report/index.html"
  test -s "$smoke/results/report/index.html"
fi
step "done"
