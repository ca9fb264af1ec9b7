# Stage: data. (Filled in by its issue; appends to TARGETS and REPORT_SECTIONS.)


# --- heart (seed 004): owned by the decentral stage ---
HEART_CFG = config["data"].get("heart", {})


rule data_heart:
    output:
        features="results/data/heart/features.parquet",
        obs="results/data/heart/obs.tsv",
        imputation="results/data/heart/imputation.json",
    log:
        "results/logs/data/data_heart.log",
    conda:
        "../envs/fedclust.yaml"
    params:
        cfg=HEART_CFG,
    script:
        "../scripts/data_heart.py"
