# Stage: decentral (seed 004): federated vs decentralised learning on the heart hospitals.
from fedclust.decentral import workflow as DECENTRAL_WF

DECENTRAL = config.get("decentral", {})
DECENTRAL_RUNS = DECENTRAL_WF.runs(DECENTRAL)
DECENTRAL_APPROACHES = DECENTRAL_WF.approaches(DECENTRAL)
# Fan-out (issue 14): one decentral_train job per unit (fedclust.decentral.workflow.units).
DECENTRAL_UNITS = DECENTRAL_WF.units(DECENTRAL)
DECENTRAL_UNIT_RUNS = DECENTRAL_WF.unit_runs(DECENTRAL)

DECENTRAL_TABLES = ["table_4_1_loss", "table_4_1b_loss_bce", "table_4_2_accuracy"]
DECENTRAL_TABLES += ["table_4_3_auc", "table_4_3b_auc_keras", "table_4_4_divergence"]
DECENTRAL_FIGS = ["fig4_1", "fig4_2", "fig4_3"]
DECENTRAL_REPORT = {"caption": "../report/decentral.rst", "category": "Decentral"}

DECENTRAL_WILDCARDS = {
    "split": "hospitals|sources",
    "mode": "as_published|as_described",
    "unit": "all|FL|FL_SMA|RAR|GL_conditional|GL_random|customized",
}


rule decentral_eda:
    input:
        features="results/data/heart/features.parquet",
        obs="results/data/heart/obs.tsv",
    output:
        table_3_1=report(
            "results/decentral/eda/table_3_1_clients.tsv", **DECENTRAL_REPORT
        ),
        table_3_2=report(
            "results/decentral/eda/table_3_2_describe.tsv", **DECENTRAL_REPORT
        ),
        table_3_3=report(
            "results/decentral/eda/table_3_3_outliers.tsv", **DECENTRAL_REPORT
        ),
        table_3_4=report(
            "results/decentral/eda/table_3_4_classes.tsv", **DECENTRAL_REPORT
        ),
        spearman=report(
            "results/decentral/eda/spearman_with_target.tsv", **DECENTRAL_REPORT
        ),
        fig_3_1=report("results/decentral/eda/fig3_1_violins.png", **DECENTRAL_REPORT),
        fig_3_2=report("results/decentral/eda/fig3_2_spearman.png", **DECENTRAL_REPORT),
    log:
        "results/logs/decentral/decentral_eda.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("decentral_eda")
    resources:
        **job_resources("decentral_eda"),
    params:
        heart=config.get("data", {}).get("heart", {}),
    script:
        "../scripts/decentral_eda.py"


DECENTRAL_CELLS = DECENTRAL_WF.centralized_cells(DECENTRAL)


rule decentral_centralized_cell:
    input:
        features="results/data/heart/features.parquet",
        obs="results/data/heart/obs.tsv",
    output:
        cell="results/decentral/centralized/grid/b{batch}_e{epochs}.tsv",
    log:
        "results/logs/decentral/decentral_centralized_cell_b{batch}_e{epochs}.log",
    benchmark:
        "results/benchmarks/decentral_centralized_cell/b{batch}_e{epochs}.tsv"
    wildcard_constraints:
        batch=r"\d+",
        epochs=r"\d+",
    conda:
        "../envs/fedclust.yaml"
    threads: DECENTRAL.get("threads", 1)
    resources:
        **job_resources("decentral_centralized_cell"),
    params:
        cfg=DECENTRAL,
        seed=SEED,
    script:
        "../scripts/decentral_centralized_cell.py"


rule decentral_centralized:
    input:
        features="results/data/heart/features.parquet",
        obs="results/data/heart/obs.tsv",
        cells=DECENTRAL_CELLS,
    output:
        grid="results/decentral/centralized/grid.tsv",
        result="results/decentral/centralized/result.json",
    log:
        "results/logs/decentral/decentral_centralized.log",
    benchmark:
        "results/benchmarks/decentral_centralized/all.tsv"
    conda:
        "../envs/fedclust.yaml"
    threads: DECENTRAL.get("threads", 1)
    resources:
        **job_resources("decentral_centralized"),
    params:
        cfg=DECENTRAL,
        seed=SEED,
    script:
        "../scripts/decentral_centralized.py"


rule decentral_train:
    input:
        features="results/data/heart/features.parquet",
        obs="results/data/heart/obs.tsv",
    output:
        metrics="results/decentral/runs/{split}/{mode}/units/{unit}/metrics.tsv",
        divergence="results/decentral/runs/{split}/{mode}/units/{unit}/divergence.tsv",
        ledger="results/decentral/runs/{split}/{mode}/units/{unit}/ledger.tsv",
        run="results/benchmarks/decentral/runs/{split}/{mode}/units/{unit}/run.json",  # wall_s
    log:
        "results/logs/decentral/decentral_train_{split}_{mode}_{unit}.log",
    benchmark:
        "results/benchmarks/decentral_train/{split}_{mode}_{unit}.tsv"
    wildcard_constraints:
        **DECENTRAL_WILDCARDS,
    conda:
        "../envs/fedclust.yaml"
    threads: DECENTRAL.get("threads", 1)
    resources:
        **job_resources("decentral_train"),
    params:
        cfg=DECENTRAL,
        seed=SEED,
        approaches=lambda wc: (
            DECENTRAL_APPROACHES[wc.mode] if wc.unit == "all" else [wc.unit]
        ),
        heart=config.get("data", {}).get("heart", {}),
    script:
        "../scripts/decentral_train.py"


rule decentral_merge:
    input:
        metrics=expand(
            "results/decentral/runs/{unit}/metrics.tsv", unit=DECENTRAL_UNIT_RUNS
        ),
        divergence=expand(
            "results/decentral/runs/{unit}/divergence.tsv", unit=DECENTRAL_UNIT_RUNS
        ),
        ledger=expand(
            "results/decentral/runs/{unit}/ledger.tsv", unit=DECENTRAL_UNIT_RUNS
        ),
        run=expand(
            "results/benchmarks/decentral/runs/{unit}/run.json",
            unit=DECENTRAL_UNIT_RUNS,
        ),
    output:
        metrics=expand("results/decentral/runs/{run}/metrics.tsv", run=DECENTRAL_RUNS),
        divergence=expand(
            "results/decentral/runs/{run}/divergence.tsv", run=DECENTRAL_RUNS
        ),
        ledger=expand("results/decentral/runs/{run}/ledger.tsv", run=DECENTRAL_RUNS),
        run=expand(
            "results/benchmarks/decentral/runs/{run}/run.json", run=DECENTRAL_RUNS
        ),
    log:
        "results/logs/decentral/decentral_merge.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("decentral_merge")
    resources:
        **job_resources("decentral_merge"),
    params:
        runs=DECENTRAL_RUNS,
        units=[len(DECENTRAL_UNITS[r]) for r in DECENTRAL_RUNS],
    script:
        "../scripts/decentral_merge.py"


rule decentral_report:
    input:
        metrics=rules.decentral_merge.output.metrics,
        divergence=rules.decentral_merge.output.divergence,
        ledger=rules.decentral_merge.output.ledger,
        run=rules.decentral_merge.output.run,
        centralized="results/decentral/centralized/result.json",
        imputation="results/data/heart/imputation.json",
        eda=rules.decentral_eda.output,
    output:
        tables=report(
            expand(
                "results/decentral/tables/{split}_{table}.tsv",
                split=DECENTRAL.get("splits", []),
                table=DECENTRAL_TABLES,
            ),
            **DECENTRAL_REPORT,
        ),
        figures=report(
            expand(
                "results/decentral/figures/{split}_{fig}.png",
                split=DECENTRAL.get("splits", []),
                fig=DECENTRAL_FIGS,
            ),
            **DECENTRAL_REPORT,
        ),
        wall="results/benchmarks/decentral/wall_time.tsv",
        ledger=report("results/decentral/tables/messages.tsv", **DECENTRAL_REPORT),
        centralized=report(
            "results/decentral/tables/centralized.tsv", **DECENTRAL_REPORT
        ),
        section="results/report/sections/decentral.json",
    log:
        "results/logs/decentral/decentral_report.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("decentral_report")
    resources:
        **job_resources("decentral_report"),
    params:
        cfg=DECENTRAL,
        runs=DECENTRAL_RUNS,
    script:
        "../scripts/decentral_report.py"


if enabled("decentral"):
    TARGETS += ["results/report/sections/decentral.json"]
    REPORT_SECTIONS.append("results/report/sections/decentral.json")
