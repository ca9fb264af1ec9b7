# Stage: fedcref — federated cluster-wise refinement (seed 002). See docs/ARCHITECTURE.md.
# One job per (experiment, setting, repetition) (fedcref.fanout: unit), or one job per repetition
# writing the same per-run files (fanout: repetition, issue 15); fedcref_report merges them.
# The per-cluster AEs are tiny MLPs (per-step overhead dominates): jobs run on one CPU thread,
# no GPU resource is requested; SLURM runtimes for paper-size jobs: profiles/slurm/config.yaml.
from fedclust.config import data_mirror as _fcr_mirror
from fedclust.data.registry import REGISTRY as _FCR_REGISTRY
from fedclust.fedcref import workflow as FW

FCR = config.get("fedcref", {})
FCR_DL = config["data"]["download_dir"]
FCR_MIRROR = _fcr_mirror(config)
FCR_MIRROR = str(FCR_MIRROR) if FCR_MIRROR else None
FCR_SETTINGS, FCR_RUNS, FCR_DATASETS, FCR_CALIBRATED = FW.plan(FCR)
FCR_SIZE = FW.size_study(FCR)
FCR_SIZE_OUT = (
    {
        name: f"results/fedcref/size/{FCR_SIZE}{ext}"
        for name, ext in (
            ("pairs", "_pairs.tsv"),
            ("summary", ".tsv"),
            ("figure", ".png"),
        )
    }
    if FCR_SIZE
    else {}
)
FCR_RUN_DIR = "results/fedcref/runs/{exp}/{setting}/rep{rep}"
FCR_RUN_ID = "{exp}_{setting}_{rep}"
FCR_RUN_WILDCARDS = {"exp": "exp[1-4]", "setting": "[A-Za-z0-9_]+", "rep": "[0-9]+"}
FCR_UNITS = None
if FW.fanout(FCR) == "repetition":
    FCR_UNITS = FW.unit_pairs(FCR_SETTINGS)
    FCR_RUN_DIR = [f"results/fedcref/runs/{e}/{s}/rep{{rep}}" for e, s in FCR_UNITS]
    FCR_RUN_ID = "rep{rep}"
    FCR_RUN_WILDCARDS = {"rep": "[0-9]+"}
FCR_RUN_OUT = {
    name: (
        [f"{d}/{name}.tsv" for d in FCR_RUN_DIR]
        if FCR_UNITS is not None
        else f"{FCR_RUN_DIR}/{name}.tsv"
    )
    for name in ("history", "summary", "ledger")
}
# the history / summary with their timing columns (the result tables have none)
FCR_RUN_OUT.update(
    {
        f"{name}_timing": (
            [p.replace("results/", "results/benchmarks/", 1) for p in FCR_RUN_OUT[name]]
            if FCR_UNITS is not None
            else FCR_RUN_OUT[name].replace("results/", "results/benchmarks/", 1)
        )
        for name in ("history", "summary")
    }
)


for _ds in ("emnist", "kmnist", "kmnist49"):

    rule:
        name:
            f"download_{_ds}"
        output:
            f"{FCR_DL}/{_ds}/{{fcr_file}}",
        log:
            f"results/logs/data/download_{_ds}_{{fcr_file}}.log",
        wildcard_constraints:
            fcr_file="|".join(_FCR_REGISTRY[_ds]).replace(".", r"\."),
        retries: 1
        conda:
            "../envs/fedclust.yaml"
        threads: job_threads(f"download_{_ds}")
        resources:
            **job_resources(f"download_{_ds}"),
        params:
            dataset=_ds,
            mirror=FCR_MIRROR,
            cfg=config["data"]["download"],
        script:
            "../scripts/data_download.py"


rule fedcref_dataset:
    input:
        lambda w: FW.dataset_files(FCR, FCR_DL, w.dataset),
    output:
        "results/fedcref/data/{dataset}.npz",
    log:
        "results/logs/fedcref/fedcref_dataset_{dataset}.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("fedcref_dataset")
    resources:
        **job_resources("fedcref_dataset"),
    params:
        cfg=FCR,
        seed=SEED,
    script:
        "../scripts/fedcref_dataset.py"


rule fedcref_calibrate:
    input:
        data="results/fedcref/data/{dataset}.npz",
    output:
        json="results/fedcref/calibration/{dataset}.json",
        pairs="results/fedcref/calibration/{dataset}_pairs.tsv",
        figure="results/fedcref/calibration/{dataset}.png",
    log:
        "results/logs/fedcref/fedcref_calibrate_{dataset}.log",
    benchmark:
        "results/benchmarks/fedcref_calibrate/{dataset}.tsv"
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("fedcref_calibrate")
    resources:
        **job_resources("fedcref_calibrate"),
    params:
        cfg=FCR,
        seed=SEED,
        levels=lambda w: FW.calibration_levels(FCR, FCR_SETTINGS, w.dataset),
    script:
        "../scripts/fedcref_calibrate.py"


if FCR_SIZE:

    rule fedcref_size:
        input:
            data=f"results/fedcref/data/{FCR_SIZE}.npz",
        output:
            **FCR_SIZE_OUT,
        log:
            "results/logs/fedcref/fedcref_size.log",
        benchmark:
            "results/benchmarks/fedcref_size/size.tsv"
        conda:
            "../envs/fedclust.yaml"
        threads: job_threads("fedcref_size")
        resources:
            **job_resources("fedcref_size"),
        params:
            cfg=FCR,
            seed=SEED,
        script:
            "../scripts/fedcref_size.py"


rule fedcref_run:
    input:
        unpack(lambda w: FW.job_inputs(FCR_SETTINGS, FCR_CALIBRATED, FCR_UNITS, w)),
    output:
        **FCR_RUN_OUT,
    log:
        f"results/logs/fedcref/fedcref_run_{FCR_RUN_ID}.log",
    benchmark:
        f"results/benchmarks/fedcref_run/{FCR_RUN_ID}.tsv"
    wildcard_constraints:
        **FCR_RUN_WILDCARDS,
    priority: PRIORITY_LONG
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("fedcref_run")
    resources:
        **job_resources("fedcref_run"),
    params:
        cfg=FCR,
        seed=SEED,
        settings=FCR_SETTINGS,
        calibrated=FCR_CALIBRATED,
        units=FCR_UNITS,
    script:
        "../scripts/fedcref_run.py"


rule fedcref_cross_method:
    input:
        unpack(lambda w: FW.run_inputs(FCR_SETTINGS, FCR_CALIBRATED, w.exp, w.setting)),
    output:
        table="results/fedcref/runs/{exp}/{setting}/rep{rep}/cross_method.tsv",
    log:
        "results/logs/fedcref/fedcref_cross_method_{exp}_{setting}_{rep}.log",
    benchmark:
        "results/benchmarks/fedcref_cross_method/{exp}_{setting}_{rep}.tsv"
    wildcard_constraints:
        exp="exp1",
        setting="[A-Za-z0-9_]+",
        rep="[0-9]+",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("fedcref_cross_method")
    resources:
        **job_resources("fedcref_cross_method"),
    params:
        cfg=FCR,
        seed=SEED,
        settings=FCR_SETTINGS,
        dec=config.get("dec"),
    script:
        "../scripts/fedcref_cross_method.py"


rule fedcref_report:
    input:
        summaries=[
            f"results/fedcref/runs/{e}/{s}/rep{r}/summary.tsv" for e, s, r in FCR_RUNS
        ],
        summaries_timing=[
            f"results/benchmarks/fedcref/runs/{e}/{s}/rep{r}/summary.tsv"
            for e, s, r in FCR_RUNS
        ],
        histories=[
            f"results/fedcref/runs/{e}/{s}/rep{r}/history.tsv" for e, s, r in FCR_RUNS
        ],
        cross=[
            f"results/fedcref/runs/{e}/{s}/rep{r}/cross_method.tsv"
            for e, s, r in FCR_RUNS
            if e == "exp1"
        ],
        calibration=expand(
            "results/fedcref/calibration/{dataset}.json", dataset=FCR_DATASETS
        ),
        calibration_figures=expand(
            "results/fedcref/calibration/{dataset}.png", dataset=FCR_DATASETS
        ),
        size_study=list(FCR_SIZE_OUT.values()),
    output:
        section="results/report/sections/fedcref.json",
        tables=directory("results/fedcref/tables"),
        tables_timing=directory("results/benchmarks/fedcref/tables"),
        figures=directory("results/fedcref/figures"),
    log:
        "results/logs/fedcref/fedcref_report.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("fedcref_report")
    resources:
        **job_resources("fedcref_report"),
    params:
        cfg=FCR,
        runs=FCR_RUNS,
        settings=FCR_SETTINGS,
        datasets=FCR_DATASETS,
    script:
        "../scripts/fedcref_report.py"


if enabled("fedcref"):
    TARGETS += ["results/report/sections/fedcref.json"]
    REPORT_SECTIONS.append("results/report/sections/fedcref.json")
