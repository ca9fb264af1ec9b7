# Stage: hac — federated hierarchical clustering of RNA-seq (seed 001, issue 3).
# One job per (cohort, variant, panel/linkage, seed block) (issue 14): hac_gradual /
# hac_simultaneous / hac_projection run parts (fedclust.hac.workflow), hac_merge concatenates them.
from fedclust.hac import workflow as HW

HAC = config.get("hac", {})
HAC_COHORTS = HAC.get("cohorts") or config["data"]["rnaseq"]["cohorts"]
HAC_FIGURES = [
    "pca",
    "bimodal",
    "simultaneous",
    "gradual",
    "nmin10",
    "monotone",
    "toy_projection",
    "min_sketch",
    "projection_cohorts",
    "projection_error",
    "projection_metrics",
    "inversions",
    "outlier",
]

HAC_REPORT = {"caption": "../report/hac.rst", "category": "HAC"}


rule hac_toy:
    output:
        bimodal="results/hac/toy/bimodal.tsv",
        projection="results/hac/toy/projection.tsv",
        min_sketch="results/hac/toy/min_sketch.tsv",
    log:
        "results/logs/hac/hac_toy.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("hac_toy")
    resources:
        **job_resources("hac_toy"),
    params:
        cfg=HAC,
        seed=SEED,
    script:
        "../scripts/hac_toy.py"


HAC_DATA = "results/data/rnaseq/{cohort}"
HAC_PART = {"cohort": "[A-Z0-9]+", "part": "[A-Za-z0-9_-]+"}


rule hac_gradual:
    input:
        sf=f"{HAC_DATA}/sf.parquet",
        vst=f"{HAC_DATA}/vst.parquet",
        obs=f"{HAC_DATA}/obs.tsv",
        # the centres' release logs so far (issue 22): jobs publishing sums of one matrix chain
        logs=HW.log_inputs(HAC, "gradual"),
    output:
        # with the timing columns; hac_merge splits them off
        table="results/benchmarks/hac/{cohort}/parts/gradual/{part}.parquet",
        cuts="results/hac/{cohort}/parts/gradual/{part}_cuts.parquet",
        release_log="results/hac/{cohort}/release_log/gradual_{part}.json",
    log:
        "results/logs/hac/hac_gradual/{cohort}/{part}.log",
    benchmark:
        "results/benchmarks/hac_gradual/{cohort}/{part}.tsv"
    wildcard_constraints:
        **HAC_PART,
    priority: PRIORITY_LONG
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("hac_gradual")
    resources:
        **job_resources("hac_gradual"),
    params:
        cfg=HAC,
        seed=SEED,
        variant="gradual",
    script:
        "../scripts/hac_part.py"


rule hac_simultaneous:
    input:
        sf=f"{HAC_DATA}/sf.parquet",
        vst=f"{HAC_DATA}/vst.parquet",
        obs=f"{HAC_DATA}/obs.tsv",
        logs=HW.log_inputs(HAC, "simultaneous"),
    output:
        table="results/hac/{cohort}/parts/simultaneous/{part}.parquet",
        cuts="results/hac/{cohort}/parts/simultaneous/{part}_cuts.parquet",
        release_log="results/hac/{cohort}/release_log/simultaneous_{part}.json",
    log:
        "results/logs/hac/hac_simultaneous/{cohort}/{part}.log",
    benchmark:
        "results/benchmarks/hac_simultaneous/{cohort}/{part}.tsv"
    wildcard_constraints:
        **HAC_PART,
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("hac_simultaneous")
    resources:
        **job_resources("hac_simultaneous"),
    params:
        cfg=HAC,
        seed=SEED,
        variant="simultaneous",
    script:
        "../scripts/hac_part.py"


rule hac_projection:
    input:
        sf=f"{HAC_DATA}/sf.parquet",
        vst=f"{HAC_DATA}/vst.parquet",
        obs=f"{HAC_DATA}/obs.tsv",
    output:
        # with the timing columns; hac_merge splits them off
        table="results/benchmarks/hac/{cohort}/parts/projection/{part}.parquet",
    log:
        "results/logs/hac/hac_projection/{cohort}/{part}.log",
    benchmark:
        "results/benchmarks/hac_projection/{cohort}/{part}.tsv"
    wildcard_constraints:
        **HAC_PART,
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("hac_projection")
    resources:
        **job_resources("hac_projection"),
    params:
        cfg=HAC,
        seed=SEED,
        variant="projection",
    script:
        "../scripts/hac_part.py"


rule hac_exact:
    input:
        sf=f"{HAC_DATA}/sf.parquet",
        vst=f"{HAC_DATA}/vst.parquet",
        obs=f"{HAC_DATA}/obs.tsv",
    output:
        exact="results/hac/{cohort}/exact.tsv",
        pca="results/hac/{cohort}/pca.tsv",
    log:
        "results/logs/hac/hac_exact_{cohort}.log",
    benchmark:
        "results/benchmarks/hac_exact/{cohort}.tsv"
    wildcard_constraints:
        cohort=HAC_PART["cohort"],
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("hac_exact")
    resources:
        **job_resources("hac_exact"),
    params:
        cfg=HAC,
        seed=SEED,
    script:
        "../scripts/hac_exact.py"


rule hac_merge:
    input:
        gradual=HW.part_inputs(HAC, "gradual", "bench"),
        gradual_cuts=HW.part_inputs(HAC, "gradual", "cuts"),
        simultaneous=HW.part_inputs(HAC, "simultaneous"),
        simultaneous_cuts=HW.part_inputs(HAC, "simultaneous", "cuts"),
        projection=HW.part_inputs(HAC, "projection", "bench"),
    output:
        gradual="results/hac/{cohort}/gradual.tsv",
        simultaneous="results/hac/{cohort}/simultaneous.tsv",
        projection="results/hac/{cohort}/projection.tsv",
        cuts="results/hac/{cohort}/cuts.tsv",
        # the same tables with their timing columns (results stay byte-identical across runs)
        gradual_bench="results/benchmarks/hac/{cohort}/gradual.tsv",
        projection_bench="results/benchmarks/hac/{cohort}/projection.tsv",
    log:
        "results/logs/hac/hac_merge_{cohort}.log",
    wildcard_constraints:
        cohort=HAC_PART["cohort"],
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("hac_merge")
    resources:
        **job_resources("hac_merge"),
    params:
        cfg=HAC,
    script:
        "../scripts/hac_merge.py"


rule hac_report:
    input:
        bimodal=rules.hac_toy.output.bimodal,
        toy_projection=rules.hac_toy.output.projection,
        min_sketch=rules.hac_toy.output.min_sketch,
        gradual=expand("results/hac/{cohort}/gradual.tsv", cohort=HAC_COHORTS),
        simultaneous=expand("results/hac/{cohort}/simultaneous.tsv", cohort=HAC_COHORTS),
        projection=expand("results/hac/{cohort}/projection.tsv", cohort=HAC_COHORTS),
        exact=expand("results/hac/{cohort}/exact.tsv", cohort=HAC_COHORTS),
        pca=expand("results/hac/{cohort}/pca.tsv", cohort=HAC_COHORTS),
        gradual_bench=expand(
            "results/benchmarks/hac/{cohort}/gradual.tsv", cohort=HAC_COHORTS
        ),
        projection_bench=expand(
            "results/benchmarks/hac/{cohort}/projection.tsv", cohort=HAC_COHORTS
        ),
        cuts=expand("results/hac/{cohort}/cuts.tsv", cohort=HAC_COHORTS),
        obs=expand("results/data/rnaseq/{cohort}/obs.tsv", cohort=HAC_COHORTS),
    output:
        section="results/report/sections/hac.json",
        figures=report(
            expand("results/hac/figures/{name}.png", name=HAC_FIGURES), **HAC_REPORT
        ),
        table41=report("results/hac/tables/table41.tsv", **HAC_REPORT),
        table41_bench="results/benchmarks/hac/table41.tsv",
        nmin10=report("results/hac/tables/nmin10.tsv", **HAC_REPORT),
        exact=report("results/hac/tables/exact.tsv", **HAC_REPORT),
        cuts=report("results/hac/tables/cuts.tsv", **HAC_REPORT),
        skipped=report("results/hac/tables/skipped.tsv", **HAC_REPORT),
        cohorts=report("results/hac/tables/cohorts.tsv", **HAC_REPORT),
        outlier=report("results/hac/tables/outlier.tsv", **HAC_REPORT),
    log:
        "results/logs/hac/hac_report.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("hac_report")
    resources:
        **job_resources("hac_report"),
    params:
        cfg=HAC,
        cohorts=HAC_COHORTS,
        seed=SEED,
        config_name=config["report"]["config_name"],
    script:
        "../scripts/hac_report.py"


if enabled("hac"):
    TARGETS += rules.hac_report.output
    REPORT_SECTIONS.append("results/report/sections/hac.json")
