# Stage: perf — federated HAC methods vs their pooled scipy references, timed in this run (issue 15).
# Its tables are timings, so they live under results/benchmarks/ (result tables stay byte-identical).
PERF = config.get("perf", {})


rule perf_hac:
    output:
        table="results/benchmarks/perf/hac.tsv",
        machine="results/benchmarks/perf/machine.json",
        section="results/report/sections/perf.json",
    log:
        "results/logs/perf/perf_hac.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("perf_hac")
    resources:
        **job_resources("perf_hac"),
    params:
        cfg=PERF,
        seed=SEED,
    script:
        "../scripts/perf_hac.py"


if enabled("perf"):
    TARGETS += rules.perf_hac.output
    REPORT_SECTIONS.append("results/report/sections/perf.json")
