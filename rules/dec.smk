# Stage: dec — federated deep embedded clustering (seed 000). See docs/ARCHITECTURE.md.
# Fan-out (issue 14): dec.fanout picks one job per dataset/optimizer/configuration (centralized)
# and per split/strategy/aggregation (federated); merges write the tables the report reads.
from fedclust.dec import workflow as DEC_WF
from fedclust.dec import tuning_plots as DEC_TUNE_PLOTS

DEC = config.get("dec", {})
DEC_DATASETS = list(DEC.get("datasets", {}))
DEC_FED = [
    (d, s) for d in DEC.get("federated_datasets", []) for s in DEC.get("splits", [])
]
DEC_WILDCARDS = {"dataset": "[A-Za-z0-9_]+", "split": "[A-Za-z0-9_]+"}
DEC_REPORT = {"caption": "../report/dec.rst", "category": "DEC"}
DEC_RUN = {**DEC_REPORT, "subcategory": "{dataset}"}


DEC_UNIT_WILDCARDS = {**DEC_WILDCARDS, "unit": "[A-Za-z0-9_.-]+", "optimizer": "[a-z]+"}


rule dec_tsae:
    input:
        features="results/data/{dataset}/features.parquet",
        obs="results/data/{dataset}/obs.tsv",
        settings=lambda w: DEC_WF.step1_settings(DEC, w),
    output:
        tsae="results/dec/{dataset}/centralized/tsae/{optimizer}.pt",
    log:
        "results/logs/dec/dec_tsae_{dataset}_{optimizer}.log",
    benchmark:
        "results/benchmarks/dec_tsae/{dataset}_{optimizer}.tsv"
    wildcard_constraints:
        dataset=DEC_WILDCARDS["dataset"],
        optimizer=DEC_UNIT_WILDCARDS["optimizer"],
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_tsae")
    resources:
        **job_resources("dec_tsae"),
    params:
        cfg=DEC,
        seed=SEED,
    script:
        "../scripts/dec_tsae.py"


rule dec_train_unit:
    input:
        features="results/data/{dataset}/features.parquet",
        obs="results/data/{dataset}/obs.tsv",
        settings=lambda w: DEC_WF.final_settings(DEC, w),
        tsae=lambda w: DEC_WF.unit_tsae(DEC, w),
    output:
        table="results/dec/{dataset}/centralized/units/{unit}/results.parquet",
        ae_curves="results/dec/{dataset}/centralized/units/{unit}/ae_curves.parquet",
        dec_curves="results/dec/{dataset}/centralized/units/{unit}/dec_curves.parquet",
        best="results/dec/{dataset}/centralized/units/{unit}/best.pt",
    log:
        "results/logs/dec/dec_train_unit_{dataset}_{unit}.log",
    benchmark:
        "results/benchmarks/dec_train_unit/{dataset}_{unit}.tsv"
    wildcard_constraints:
        dataset=DEC_WILDCARDS["dataset"],
        unit=DEC_UNIT_WILDCARDS["unit"],
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_train_unit")
    resources:
        **job_resources("dec_train_unit"),
    params:
        cfg=DEC,
        seed=SEED,
    script:
        "../scripts/dec_unit.py"


rule dec_train:
    input:
        features="results/data/{dataset}/features.parquet",
        obs="results/data/{dataset}/obs.tsv",
        settings=lambda w: DEC_WF.final_settings(DEC, w),
        tsae=lambda w: DEC_WF.merge_tsae(DEC, w),
        unit_tables=lambda w: DEC_WF.central_unit_files(DEC, w, "results.parquet"),
        unit_ae=lambda w: DEC_WF.central_unit_files(DEC, w, "ae_curves.parquet"),
        unit_dec=lambda w: DEC_WF.central_unit_files(DEC, w, "dec_curves.parquet"),
        unit_best=lambda w: DEC_WF.central_unit_files(DEC, w, "best.pt"),
    output:
        table=report("results/dec/{dataset}/centralized/results.tsv", **DEC_RUN),
        ae_curves="results/dec/{dataset}/centralized/ae_curves.tsv",
        dec_curves="results/dec/{dataset}/centralized/dec_curves.tsv",
        labels="results/dec/{dataset}/centralized/labels.tsv",
        reference=report(
            "results/dec/{dataset}/centralized/reference_scores.tsv", **DEC_RUN
        ),
        curves=report("results/dec/{dataset}/centralized/curves.png", **DEC_RUN),
        tsne=report("results/dec/{dataset}/centralized/tsne.png", **DEC_RUN),
        generated=report("results/dec/{dataset}/centralized/generated.png", **DEC_RUN),
    log:
        "results/logs/dec/dec_train_{dataset}.log",
    benchmark:
        "results/benchmarks/dec_train/{dataset}.tsv"
    wildcard_constraints:
        dataset=DEC_WILDCARDS["dataset"],
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_train")
    resources:
        **job_resources("dec_train"),
    params:
        cfg=DEC,
        seed=SEED,
    script:
        "../scripts/dec_centralized.py"


rule dec_survival:
    input:
        labels="results/dec/mds/centralized/labels.tsv",
        obs="results/data/mds/obs.tsv",
    output:
        figure=report("results/dec/mds/centralized/km.png", **DEC_REPORT),
        table=report("results/dec/mds/centralized/km.tsv", **DEC_REPORT),
    log:
        "results/logs/dec/dec_survival.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_survival")
    resources:
        **job_resources("dec_survival"),
    params:
        cfg=DEC,
    script:
        "../scripts/dec_survival.py"


rule dec_splits:
    input:
        obs="results/data/{dataset}/obs.tsv",
        splits=lambda w: expand(
            "results/data/{dataset}/splits/{split}.tsv",
            dataset=w.dataset,
            split=DEC.get("splits", []),
        ),
    output:
        figure=report("results/dec/{dataset}/splits.png", **DEC_RUN),
        table=report("results/dec/{dataset}/splits.tsv", **DEC_RUN),
    log:
        "results/logs/dec/dec_splits_{dataset}.log",
    wildcard_constraints:
        dataset=DEC_WILDCARDS["dataset"],
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_splits")
    resources:
        **job_resources("dec_splits"),
    params:
        splits=DEC.get("splits", []),
    script:
        "../scripts/dec_splits.py"


rule dec_fed_tsae:
    input:
        features="results/data/{dataset}/features.parquet",
        obs="results/data/{dataset}/obs.tsv",
        split="results/data/{dataset}/splits/{split}.tsv",
        settings=lambda w: DEC_WF.step1_settings(DEC, w),
    output:
        state="results/dec/{dataset}/federated/{split}/tsae/{strategy}.pt",
    log:
        "results/logs/dec/dec_fed_tsae_{dataset}_{split}_{strategy}.log",
    benchmark:
        "results/benchmarks/dec_fed_tsae/{dataset}_{split}_{strategy}.tsv"
    wildcard_constraints:
        **DEC_WILDCARDS,
        strategy=DEC_UNIT_WILDCARDS["optimizer"],
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_fed_tsae")
    resources:
        **job_resources("dec_fed_tsae"),
    params:
        cfg=DEC,
        seed=SEED,
    script:
        "../scripts/dec_fed_tsae.py"


rule dec_train_federated_unit:
    input:
        features="results/data/{dataset}/features.parquet",
        obs="results/data/{dataset}/obs.tsv",
        split="results/data/{dataset}/splits/{split}.tsv",
        settings=lambda w: DEC_WF.final_settings(DEC, w),
        tsae=lambda w: DEC_WF.fed_unit_tsae(DEC, w),
    output:
        table="results/dec/{dataset}/federated/{split}/units/{unit}/results.parquet",
        curves="results/dec/{dataset}/federated/{split}/units/{unit}/curves.parquet",
        ledger="results/dec/{dataset}/federated/{split}/units/{unit}/ledger.parquet",
    log:
        "results/logs/dec/dec_train_federated_unit_{dataset}_{split}_{unit}.log",
    benchmark:
        "results/benchmarks/dec_train_federated_unit/{dataset}_{split}_{unit}.tsv"
    wildcard_constraints:
        **DEC_UNIT_WILDCARDS,
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_train_federated_unit")
    resources:
        **job_resources("dec_train_federated_unit"),
    params:
        cfg=DEC,
        seed=SEED,
    script:
        "../scripts/dec_fed_unit.py"


rule dec_train_federated:
    input:
        unit_tables=lambda w: DEC_WF.federated_unit_files(DEC, w, "results.parquet"),
        unit_curves=lambda w: DEC_WF.federated_unit_files(DEC, w, "curves.parquet"),
        unit_ledgers=lambda w: DEC_WF.federated_unit_files(DEC, w, "ledger.parquet"),
    output:
        table=report("results/dec/{dataset}/federated/{split}/results.tsv", **DEC_RUN),
        curves="results/dec/{dataset}/federated/{split}/curves.tsv",
        ledger="results/dec/{dataset}/federated/{split}/ledger.tsv",
        figure=report("results/dec/{dataset}/federated/{split}/curves.png", **DEC_RUN),
    log:
        "results/logs/dec/dec_train_federated_{dataset}_{split}.log",
    wildcard_constraints:
        **DEC_WILDCARDS,
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_train_federated")
    resources:
        **job_resources("dec_train_federated"),
    params:
        cfg=DEC,
    script:
        "../scripts/dec_federated.py"


rule dec_tune_point:
    input:
        features="results/data/{dataset}/features.parquet",
        obs="results/data/{dataset}/obs.tsv",
        settings=lambda w: DEC_WF.tune_previous(DEC, w),
        tsae=lambda w: DEC_WF.tune_tsae(DEC, w, SEED),
    output:
        table="results/dec/{dataset}/tuning/{grid}/{unit}.parquet",
    log:
        "results/logs/dec/dec_tune_point_{dataset}_{grid}_{unit}.log",
    benchmark:
        "results/benchmarks/dec_tune_point/{dataset}_{grid}_{unit}.tsv"
    wildcard_constraints:
        dataset=DEC_WILDCARDS["dataset"],
        grid="lr|batch|regularizers|cluster",
        unit=DEC_UNIT_WILDCARDS["unit"],
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_tune_point")
    resources:
        **job_resources("dec_tune_point"),
    params:
        cfg=DEC,
        seed=SEED,
    script:
        "../scripts/dec_tune_point.py"


rule dec_tune_select:
    input:
        points=lambda w: DEC_WF.tune_points(DEC, w, SEED),
        settings=lambda w: DEC_WF.tune_previous(DEC, w),
    output:
        table=report("results/dec/{dataset}/tuning/{grid}.tsv", **DEC_RUN),
        best=report("results/dec/{dataset}/tuning/{grid}_best.tsv", **DEC_RUN),
        settings="results/dec/{dataset}/tuning/{grid}_selected.json",
    log:
        "results/logs/dec/dec_tune_select_{dataset}_{grid}.log",
    wildcard_constraints:
        dataset=DEC_WILDCARDS["dataset"],
        grid="lr|batch|regularizers|cluster",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_tune_select")
    resources:
        **job_resources("dec_tune_select"),
    params:
        cfg=DEC,
    script:
        "../scripts/dec_tune_select.py"


rule dec_tune_reuse:
    input:
        unpack(lambda w: DEC_WF.reuse_inputs(DEC, w)),
    output:
        settings="results/dec/{dataset}/tuning/{grid}_reused.json",
    log:
        "results/logs/dec/dec_tune_reuse_{dataset}_{grid}.log",
    wildcard_constraints:
        dataset=DEC_WILDCARDS["dataset"],
        grid="lr|batch|regularizers|cluster",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_tune_reuse")
    resources:
        **job_resources("dec_tune_reuse"),
    script:
        "../scripts/dec_tune_reuse.py"


rule dec_tune_figure:
    input:
        table="results/dec/{dataset}/tuning/{grid}.tsv",
    output:
        figure=report(
            "results/dec/{dataset}/tuning/figures/{grid}_{panel}.png",
            caption="../report/dec_tuning.rst",
            category="DEC",
            subcategory="tuning {dataset}",
        ),
    log:
        "results/logs/dec/dec_tune_figure_{dataset}_{grid}_{panel}.log",
    wildcard_constraints:
        dataset=DEC_WILDCARDS["dataset"],
        grid="lr|regularizers",
        panel="[a-z]+(_[a-z]+)?",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_tune_figure")
    resources:
        **job_resources("dec_tune_figure"),
    params:
        cfg=DEC,
        thesis=lambda w: DEC_TUNE_PLOTS.thesis_caption(
            w.dataset, w.grid, w.panel, DEC_WF.data_source(config, w.dataset)
        ),
    script:
        "../scripts/dec_tune_figure.py"


rule dec_report:
    input:
        central=expand(
            "results/dec/{dataset}/centralized/results.tsv", dataset=DEC_DATASETS
        ),
        figures=expand(
            "results/dec/{dataset}/centralized/{fig}.png",
            dataset=DEC_DATASETS,
            fig=["curves", "tsne", "generated"],
        ),
        survival=(
            [
                "results/dec/mds/centralized/km.tsv",
                "results/dec/mds/centralized/km.png",
            ]
            if "mds" in DEC_DATASETS
            else []
        ),
        federated=[f"results/dec/{d}/federated/{s}/results.tsv" for d, s in DEC_FED],
        reference=expand(
            "results/dec/{dataset}/centralized/reference_scores.tsv",
            dataset=DEC_DATASETS,
        ),
        splits=expand(
            "results/dec/{dataset}/splits.{ext}",
            dataset=DEC.get("federated_datasets", []) if DEC_FED else [],
            ext=["png", "tsv"],
        ),
        ledgers=[f"results/dec/{d}/federated/{s}/ledger.tsv" for d, s in DEC_FED],
        fed_figures=[f"results/dec/{d}/federated/{s}/curves.png" for d, s in DEC_FED],
        tuning=DEC_WF.tuning_targets(DEC),
    output:
        section="results/report/sections/dec.json",
        cycle=report("results/dec/cycle_vs_recon.png", **DEC_REPORT),
        federated=report("results/dec/federated_summary.tsv", **DEC_REPORT),
        ledger=report("results/dec/ledger_summary.tsv", **DEC_REPORT),
    log:
        "results/logs/dec/dec_report.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_report")
    resources:
        **job_resources("dec_report"),
    params:
        cfg=DEC,
        datasets=DEC_DATASETS,
        federated=DEC_FED,
        sources={d: DEC_WF.data_source(config, d) for d in DEC_DATASETS},
    script:
        "../scripts/dec_report.py"


if enabled("dec"):
    TARGETS += ["results/report/sections/dec.json"]
    REPORT_SECTIONS.append("results/report/sections/dec.json")
