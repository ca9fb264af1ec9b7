#!/usr/bin/env bash
# The README's test command: fresh venv, install, lint, dry runs, pytest, small end-to-end run.
#   bash scripts/test.sh            (FEDCLUST_VENV=... to reuse a venv; FEDCLUST_SKIP_E2E=1 to skip
#                                    the end-to-end runs; FEDCLUST_TEST_WORKERS=N pytest workers, 2)
# Data (issue 30 A): a clone alone is enough. The offline data mirror is FEDCLUST_DATA_MIRROR when
# set (it must exist: a config-time error otherwise), else ../shared/data when that folder exists
# (CI), else none. The default end-to-end run never uses it (the newcomer path: embedded and
# simulated data only); pytest and the thesis smoke run use it when there is one (real IPSS-M),
# else the smoke run reads the simulated MDS cohort.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${FEDCLUST_VENV:-.venv}
if [ -z "${FEDCLUST_DATA_MIRROR:-}" ] && [ -d ../shared/data ]; then
  FEDCLUST_DATA_MIRROR=$(cd ../shared/data && pwd)
fi
if [ -n "${FEDCLUST_DATA_MIRROR:-}" ]; then
  export FEDCLUST_DATA_MIRROR
  echo "data mirror: $FEDCLUST_DATA_MIRROR"
else
  unset FEDCLUST_DATA_MIRROR
  echo "data mirror: none (offline data only; tests that need the mirror are skipped)"
fi
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

# both cores (issue 30: 15-16 min in one process): pytest-xdist, one file per worker at a time
# (--dist loadfile keeps each file's module fixtures in one process), one BLAS/torch thread per
# worker; FEDCLUST_TEST_WORKERS=0 runs it in this process. --durations: the slowest tests in the log.
step "pytest (${FEDCLUST_TEST_WORKERS:-2} workers)"
OMP_NUM_THREADS=1 pytest -q -p no:cacheprovider -n "${FEDCLUST_TEST_WORKERS:-2}" --dist loadfile \
  --durations=25

if [ -z "${FEDCLUST_SKIP_E2E:-}" ]; then
  # the newcomer path: no data mirror (the default config is offline), whatever this machine has
  step "end-to-end run of the default config, without the data mirror"
  work=$(mktemp -d)
  start=$(date +%s)
  env -u FEDCLUST_DATA_MIRROR snakemake --cores 2 --directory "$work" -s "$PWD/Snakefile" \
    --configfile "$PWD/config/config.yaml" -q
  echo "default workflow: $(( $(date +%s) - start )) s; report: $work/results/report/index.html"
  test -s "$work/results/report/index.html"
  if python -c "from fedclust.report.browser import find_browser as f; raise SystemExit(f() is None)"; then
    step "the report in headless Chromium (every section rendered, every image loaded)"
    python -m fedclust.report.browser "$work/results/report/index.html"
  fi
  step "snakemake --report of that run"
  env -u FEDCLUST_DATA_MIRROR snakemake -q --directory "$work" -s "$PWD/Snakefile" \
    --configfile "$PWD/config/config.yaml" --report "$work/report.html"
  test -s "$work/report.html" && echo "snakemake report: $work/report.html"
  # issue 14: config/thesis.yaml's DAG (every rule and fan-out wildcard) at tiny sizes, run
  # real IPSS-M from the mirror when there is one; else (a clone alone) the simulated MDS cohort
  smoke=$(mktemp -d)
  smoke_cfg="$PWD/config/thesis-smoke.yaml"
  if [ -n "${FEDCLUST_DATA_MIRROR:-}" ]; then
    step "end-to-end run of the thesis smoke config (thesis DAG, tiny sizes, IPSS-M from the mirror)"
  else
    step "end-to-end run of the thesis smoke config (thesis DAG, tiny sizes, no mirror: simulated MDS)"
    smoke_cfg="$smoke/thesis-smoke-offline.yaml"
    printf 'base: %s\ndata:\n  mds:\n    source: simulated\n' "$PWD/config/thesis-smoke.yaml" \
      >"$smoke_cfg"
  fi
  start=$(date +%s)
  snakemake --cores 2 --directory "$smoke" -s "$PWD/Snakefile" --configfile "$smoke_cfg" -q
  echo "thesis smoke workflow: $(( $(date +%s) - start )) s; report: $smoke/results/report/index.html"
  test -s "$smoke/results/report/index.html"
fi
step "done"
