#!/usr/bin/env bash
# Measure one job of each rule of the default config with /usr/bin/time -v (docs/RESOURCES.md).
#   bash benchmarks/measure_rules.sh /tmp/fedclust-measure [jobs|reports|all]  -> <dir>/measure.tsv
# Each target is built by its own `snakemake --cores 1` call after its inputs exist, so the
# numbers are one job: wall seconds and peak RSS of snakemake + the rule's script together
# (what a SLURM job running that rule needs). Targets are listed in DAG order.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/fedclust-measure}
part=${2:-all}
mkdir -p "$work"
out="$work/measure.tsv"
[ -s "$out" ] || printf 'rule\ttarget\twall_s\tmax_rss_mb\tuser_s\tsys_s\n' >"$out"
measure() {  # rule target
  local rule=$1 target=$2 log="$work/time_${1}.txt"
  /usr/bin/time -v -o "$log" snakemake "$target" --cores 1 -q --directory "$work" -s "$repo/Snakefile" \
    --configfile "$repo/config/config.yaml" >"$work/snakemake_${rule}.log" 2>&1 || { echo "FAILED $rule"; return 1; }
  python3 - "$rule" "$target" "$log" >>"$out" <<'PY'
import re, sys
rule, target, log = sys.argv[1:]
t = open(log).read()
def get(key):
    return re.search(re.escape(key) + r":\s*(.+)", t).group(1).strip()
wall = get("Elapsed (wall clock) time (h:mm:ss or m:ss)")
parts = [float(p) for p in wall.split(":")]
sec = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
rss = int(get("Maximum resident set size (kbytes)")) / 1024
print(f"{rule}\t{target}\t{sec:.1f}\t{rss:.0f}\t{get('User time (seconds)')}\t{get('System time (seconds)')}")
PY
  tail -1 "$out"
}
prep() {  # build a target's inputs without measuring
  snakemake "$@" --cores 1 -q --directory "$work" -s "$repo/Snakefile" \
    --configfile "$repo/config/config.yaml" >/dev/null 2>&1
}
R=results
if [ "$part" != reports ]; then
measure simulate_rnaseq $R/data/raw/rnaseq/TCGA-SIMA.star_counts.tsv.gz
measure rnaseq_cohort $R/data/rnaseq/SIMA/vst.parquet
snakemake $R/data/rnaseq/SIMB/vst.parquet --cores 1 -q --directory "$work" -s "$repo/Snakefile" --configfile "$repo/config/config.yaml" >/dev/null 2>&1
measure mds $R/data/mds/features.parquet
measure mnist $R/data/mnist/features.parquet
measure split_uniform10 $R/data/mds/splits/uniform10.tsv
measure data_heart $R/data/heart/features.parquet
measure data_report $R/data/summary.tsv
measure hac_toy $R/hac/toy/bimodal.tsv
# issue 14: the hac / attack rules run one part (default config: all units of a variant) per job
measure hac_gradual $R/benchmarks/hac/SIMA/parts/gradual/all.parquet
measure hac_simultaneous $R/hac/SIMA/parts/simultaneous/all.parquet
measure hac_projection $R/benchmarks/hac/SIMA/parts/projection/all-b0.parquet
measure hac_exact $R/hac/SIMA/exact.tsv
measure attack_known_io $R/attacks/known_io/parts/SIMA/all-b0.parquet
measure attack_property_inference $R/attacks/property_inference/parts/all-b0.parquet
measure attack_reconstruction $R/attacks/reconstruction/parts/b0/errors.parquet
measure attack_reconstruction_pinv $R/attacks/reconstruction/parts/pinv/SIMA.parquet
measure dec_train $R/dec/mnist/centralized/results.tsv
measure dec_train_mds $R/dec/mds/centralized/results.tsv
measure dec_survival $R/dec/mds/centralized/km.tsv
measure dec_train_federated $R/dec/mds/federated/uniform10/results.tsv
measure decentral_centralized $R/decentral/centralized/result.json
measure decentral_train $R/decentral/runs/hospitals/as_published/metrics.tsv
measure decentral_train_described $R/decentral/runs/hospitals/as_described/metrics.tsv
fi
if [ "$part" != jobs ]; then
prep $R/hac/SIMB/gradual.tsv $R/attacks/known_io/SIMB.tsv $R/dec/bmnist/centralized/results.tsv \
  $R/dec/mds/federated/skewed10/results.tsv $R/decentral/runs/sources/as_published/metrics.tsv \
  $R/decentral/runs/sources/as_described/metrics.tsv
measure hac_report $R/report/sections/hac.json
measure attacks_report $R/report/sections/attacks.json
measure dec_report $R/report/sections/dec.json
measure decentral_report $R/report/sections/decentral.json
measure report $R/report/index.html
fi
echo "done: $out"
