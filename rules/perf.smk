# Stage: perf — federated HAC methods vs their pooled scipy references, timed in this run (issue 15).
PERF = config.get("perf", {})


rule perf_hac:
    output:
        table="results/perf/hac.tsv",
        machine="results/perf/machine.json",
        section="results/report/sections/perf.json",
    log:
        "results/logs/perf/perf_hac.log",
    conda:
        "../envs/fedclust.yaml"
    threads: 1
    params:
        cfg=PERF,
        seed=SEED,
    script:
        "../scripts/perf_hac.py"


if enabled("perf"):
    TARGETS += rules.perf_hac.output
    REPORT_SECTIONS.append("results/report/sections/perf.json")
