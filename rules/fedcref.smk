# Stage: fedcref — federated cluster-wise refinement (seed 002). See docs/ARCHITECTURE.md.
# One job per (experiment, setting, repetition); fedcref_report merges them into Tables 1-8.
# The per-cluster AEs are tiny MLPs (per-step overhead dominates): jobs run on one CPU thread,
# no GPU resource is requested; SLURM runtimes for paper-size jobs: profiles/slurm/config.yaml.
from fedclust.config import data_mirror as _fcr_mirror
from fedclust.data.glyphs import FILES as FCR_FILES
from fedclust.data.registry import REGISTRY as _FCR_REGISTRY
from fedclust.fedcref.experiments import settings as fcr_settings

FCR = config.get("fedcref", {})
FCR_DL = config["data"]["download_dir"]
FCR_MIRROR = _fcr_mirror(config)
FCR_MIRROR = str(FCR_MIRROR) if FCR_MIRROR else None
FCR_SETTINGS = fcr_settings(FCR) if FCR else {}
FCR_RUNS = [
    (e, s, r)
    for e, ss in FCR_SETTINGS.items()
    for s in ss
    for r in range(int(FCR.get("repetitions", 1)))
]
FCR_DATASETS = sorted({o["dataset"] for ss in FCR_SETTINGS.values() for o in ss.values()})
FCR_CALIBRATED = str(FCR.get("association", {}).get("theta")) == "calibrated"


def fcr_files(wildcards):
    """Downloaded upstream files a glyph dataset needs (none for offline sources)."""
    src = FCR["datasets"][wildcards.dataset]["source"]
    if src not in FCR_FILES:
        return []
    reg, names = FCR_FILES[src]
    return [f"{FCR_DL}/{reg}/{n}" for n in names]


def fcr_run_inputs(wildcards):
    ds = FCR_SETTINGS[wildcards.exp][wildcards.setting]["dataset"]
    out = {"data": f"results/fedcref/data/{ds}.npz"}
    if FCR_CALIBRATED:
        out["calibration"] = f"results/fedcref/calibration/{ds}.json"
    return out


wildcard_constraints:
    fcr_file="[A-Za-z0-9_.-]+",


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
        params:
            dataset=_ds,
            mirror=FCR_MIRROR,
            cfg=config["data"]["download"],
        script:
            "../scripts/data_download.py"


rule fedcref_dataset:
    input:
        fcr_files,
    output:
        "results/fedcref/data/{dataset}.npz",
    log:
        "results/logs/fedcref/fedcref_dataset_{dataset}.log",
    conda:
        "../envs/fedclust.yaml"
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
    conda:
        "../envs/fedclust.yaml"
    params:
        cfg=FCR,
        seed=SEED,
    script:
        "../scripts/fedcref_calibrate.py"


rule fedcref_run:
    input:
        unpack(fcr_run_inputs),
    output:
        history="results/fedcref/runs/{exp}/{setting}/rep{rep}/history.tsv",
        summary="results/fedcref/runs/{exp}/{setting}/rep{rep}/summary.tsv",
        ledger="results/fedcref/runs/{exp}/{setting}/rep{rep}/ledger.tsv",
    log:
        "results/logs/fedcref/fedcref_run_{exp}_{setting}_{rep}.log",
    wildcard_constraints:
        exp="exp[1-4]",
        setting="[A-Za-z0-9_]+",
        rep="[0-9]+",
    conda:
        "../envs/fedclust.yaml"
    params:
        cfg=FCR,
        seed=SEED,
        settings=FCR_SETTINGS,
    script:
        "../scripts/fedcref_run.py"


rule fedcref_cross_method:
    input:
        unpack(fcr_run_inputs),
    output:
        table="results/fedcref/runs/{exp}/{setting}/rep{rep}/cross_method.tsv",
    log:
        "results/logs/fedcref/fedcref_cross_method_{exp}_{setting}_{rep}.log",
    wildcard_constraints:
        exp="exp1",
        setting="[A-Za-z0-9_]+",
        rep="[0-9]+",
    conda:
        "../envs/fedclust.yaml"
    params:
        cfg=FCR,
        seed=SEED,
        settings=FCR_SETTINGS,
    script:
        "../scripts/fedcref_cross_method.py"


rule fedcref_report:
    input:
        summaries=[
            f"results/fedcref/runs/{e}/{s}/rep{r}/summary.tsv" for e, s, r in FCR_RUNS
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
    output:
        section="results/report/sections/fedcref.json",
        tables=directory("results/fedcref/tables"),
        figures=directory("results/fedcref/figures"),
    log:
        "results/logs/fedcref/fedcref_report.log",
    conda:
        "../envs/fedclust.yaml"
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
