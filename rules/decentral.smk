# Stage: decentral (seed 004): federated vs decentralised learning on the heart hospitals.
DEC = config.get("decentral", {})
DEC_SERVER = ["FL", "FL_SMA"]
DEC_RUNS = [f"{s}/{m}" for s in DEC.get("splits", []) for m in DEC.get("modes", [])]
# FL has no exchange bug: it runs once, in as_described when that mode is on.
DEC_APPROACHES = {
    m: [
        a
        for a in DEC.get("approaches", [])
        if a not in DEC_SERVER
        or m == "as_described"
        or "as_described" not in DEC.get("modes", [])
    ]
    for m in DEC.get("modes", [])
}

DEC_TABLES = ["table_4_1_loss", "table_4_1b_loss_bce", "table_4_2_accuracy"]
DEC_TABLES += ["table_4_3_auc", "table_4_4_divergence"]
DEC_FIGS = ["fig4_1", "fig4_2", "fig4_3"]


wildcard_constraints:
    split="hospitals|sources",
    mode="as_published|as_described",


rule decentral_centralized:
    input:
        features="results/data/heart/features.parquet",
        obs="results/data/heart/obs.tsv",
    output:
        grid="results/decentral/centralized/grid.tsv",
        result="results/decentral/centralized/result.json",
    log:
        "results/logs/decentral/decentral_centralized.log",
    conda:
        "../envs/fedclust.yaml"
    threads: DEC.get("threads", 1)
    resources:
        gpu=1,
    params:
        cfg=DEC,
        seed=SEED,
    script:
        "../scripts/decentral_centralized.py"


rule decentral_train:
    input:
        features="results/data/heart/features.parquet",
        obs="results/data/heart/obs.tsv",
    output:
        metrics="results/decentral/runs/{split}/{mode}/metrics.tsv",
        divergence="results/decentral/runs/{split}/{mode}/divergence.tsv",
        ledger="results/decentral/runs/{split}/{mode}/ledger.tsv",
        run="results/decentral/runs/{split}/{mode}/run.json",
    log:
        "results/logs/decentral/decentral_train_{split}_{mode}.log",
    conda:
        "../envs/fedclust.yaml"
    threads: DEC.get("threads", 1)
    resources:
        gpu=1,
    params:
        cfg=DEC,
        seed=SEED,
        approaches=lambda wc: DEC_APPROACHES[wc.mode],
        heart=config.get("data", {}).get("heart", {}),
    script:
        "../scripts/decentral_train.py"


rule decentral_report:
    input:
        metrics=expand("results/decentral/runs/{run}/metrics.tsv", run=DEC_RUNS),
        divergence=expand("results/decentral/runs/{run}/divergence.tsv", run=DEC_RUNS),
        ledger=expand("results/decentral/runs/{run}/ledger.tsv", run=DEC_RUNS),
        run=expand("results/decentral/runs/{run}/run.json", run=DEC_RUNS),
        centralized="results/decentral/centralized/result.json",
        imputation="results/data/heart/imputation.json",
    output:
        tables=expand(
            "results/decentral/tables/{split}_{table}.tsv",
            split=DEC.get("splits", []),
            table=DEC_TABLES,
        ),
        figures=expand(
            "results/decentral/figures/{split}_{fig}.png",
            split=DEC.get("splits", []),
            fig=DEC_FIGS,
        ),
        wall="results/decentral/tables/wall_time.tsv",
        ledger="results/decentral/tables/messages.tsv",
        centralized="results/decentral/tables/centralized.tsv",
        section="results/report/sections/decentral.json",
    log:
        "results/logs/decentral/decentral_report.log",
    conda:
        "../envs/fedclust.yaml"
    params:
        cfg=DEC,
        runs=DEC_RUNS,
    script:
        "../scripts/decentral_report.py"


if enabled("decentral"):
    TARGETS += ["results/report/sections/decentral.json"]
    REPORT_SECTIONS.append("results/report/sections/decentral.json")
