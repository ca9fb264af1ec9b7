# Stage: hac — federated hierarchical clustering of RNA-seq (seed 001, issue 3).
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
]


rule hac_toy:
    output:
        bimodal="results/hac/toy/bimodal.tsv",
        projection="results/hac/toy/projection.tsv",
        min_sketch="results/hac/toy/min_sketch.tsv",
    log:
        "results/logs/hac/hac_toy.log",
    conda:
        "../envs/fedclust.yaml"
    params:
        cfg=HAC,
        seed=SEED,
    script:
        "../scripts/hac_toy.py"


rule hac_cohort:
    input:
        sf="results/data/rnaseq/{cohort}/sf.parquet",
        vst="results/data/rnaseq/{cohort}/vst.parquet",
        obs="results/data/rnaseq/{cohort}/obs.tsv",
    output:
        gradual="results/hac/{cohort}/gradual.tsv",
        simultaneous="results/hac/{cohort}/simultaneous.tsv",
        projection="results/hac/{cohort}/projection.tsv",
        exact="results/hac/{cohort}/exact.tsv",
        pca="results/hac/{cohort}/pca.tsv",
        cuts="results/hac/{cohort}/cuts.tsv",
    log:
        "results/logs/hac/hac_cohort_{cohort}.log",
    conda:
        "../envs/fedclust.yaml"
    params:
        cfg=HAC,
        seed=SEED,
    script:
        "../scripts/hac_cohort.py"


rule hac_report:
    input:
        toy=rules.hac_toy.output,
        gradual=expand("results/hac/{cohort}/gradual.tsv", cohort=HAC_COHORTS),
        simultaneous=expand("results/hac/{cohort}/simultaneous.tsv", cohort=HAC_COHORTS),
        projection=expand("results/hac/{cohort}/projection.tsv", cohort=HAC_COHORTS),
        exact=expand("results/hac/{cohort}/exact.tsv", cohort=HAC_COHORTS),
        pca=expand("results/hac/{cohort}/pca.tsv", cohort=HAC_COHORTS),
        cuts=expand("results/hac/{cohort}/cuts.tsv", cohort=HAC_COHORTS),
    output:
        section="results/report/sections/hac.json",
        figures=expand("results/hac/figures/{name}.png", name=HAC_FIGURES),
        table41="results/hac/tables/table41.tsv",
        nmin10="results/hac/tables/nmin10.tsv",
        exact="results/hac/tables/exact.tsv",
        cuts="results/hac/tables/cuts.tsv",
        skipped="results/hac/tables/skipped.tsv",
    log:
        "results/logs/hac/hac_report.log",
    conda:
        "../envs/fedclust.yaml"
    params:
        cfg=HAC,
        cohorts=HAC_COHORTS,
        figure_names=HAC_FIGURES,
        seed=SEED,
        config_name=config["report"]["config_name"],
    script:
        "../scripts/hac_report.py"


if enabled("hac"):
    TARGETS += rules.hac_report.output
    REPORT_SECTIONS.append("results/report/sections/hac.json")
