# Stage: survival — federated DeepCox and exact federated Cox-PH / KM (seed 003 §7, D6.2 ch. 8).
# One job per (endpoint, scenario, strategy, repetition) (survival.fanout: unit), or one job per
# (endpoint, repetition) writing the same per-unit files (fanout: repetition, issue 15: saves the
# per-process torch/lifelines start-up); see docs/ARCHITECTURE.md.
from fedclust.survival import workflow as SW

SURV = config.get("survival", {})
# survival.preprocess: federated reads the data stage's floor and bins (data.federated)
SURV_CFG = (
    {**SURV, "federated": config["data"]["federated"]}
    if SURV.get("preprocess") == "federated"
    else SURV
)
SURV_JOBS = SW.jobs(SURV) if enabled("survival") else []
SURV_REF = [
    (e, s)
    for e in SURV.get("endpoints", [])
    for s in SURV.get("reference_scenarios", [])
]
SURV_PRED = [(e, sc, st) for (e, sc, st, r) in SURV_JOBS if r == 0]
SURV_WILDCARDS = {
    "endpoint": "OS|LFS",
    "scenario": "[a-z_]+",
    "strategy": "[a-z_]+",
    "rep": "[0-9]+",
}
SURV_FANOUT = SW.fanout(SURV)
SURV_UNIT = "{endpoint}/{scenario}/{strategy}/rep{rep}"
SURV_JOB_ID = "{endpoint}_{scenario}_{strategy}_{rep}"
SURV_UNITS = None
if SURV_FANOUT == "repetition":
    SURV_UNITS = SW.unit_pairs(SURV)
    SURV_UNIT = [f"{{endpoint}}/{sc}/{st}/rep{{rep}}" for sc, st in SURV_UNITS]
    SURV_JOB_ID = "{endpoint}_{rep}"
    SURV_WILDCARDS = {k: SURV_WILDCARDS[k] for k in ("endpoint", "rep")}
SURV_OUT = {
    name: (
        [f"results/survival/{u}/{name}.{ext}" for u in SURV_UNIT]
        if SURV_UNITS is not None
        else f"results/survival/{SURV_UNIT}/{name}.{ext}"
    )
    for name, ext in (("result", "json"), ("cv", "tsv"), ("predictions", "tsv"))
}
# each unit's result with its wall time (the result.json beside it has none)
SURV_OUT["timing"] = (
    [p.replace("results/", "results/benchmarks/", 1) for p in SURV_OUT["result"]]
    if SURV_UNITS is not None
    else SURV_OUT["result"].replace("results/", "results/benchmarks/", 1)
)
SURV_REPORT = {"caption": "../report/survival.rst", "category": "Survival"}
# issue 28 item 7: the committed fixed-training-length measurement (benchmarks/
# survival_training_length.py), shown by the report when present
SURV_LENGTH = str(
    Path(workflow.basedir) / "docs" / "survival_training_length" / "points.tsv"
)


rule survival_cohort:
    input:
        unpack(lambda wildcards: SW.cohort_inputs(config)),
    output:
        covariates="results/survival/cohort/covariates.parquet",
        outcomes="results/survival/cohort/outcomes.tsv",
        info="results/survival/cohort/info.json",
    log:
        "results/logs/survival/survival_cohort.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("survival_cohort")
    resources:
        **job_resources("survival_cohort"),
    params:
        cfg=SURV,
        seed=SEED,
        source=SW.source(config) if enabled("survival") else "simulated",
    script:
        "../scripts/survival_cohort.py"


rule survival_job:
    input:
        covariates="results/survival/cohort/covariates.parquet",
        outcomes="results/survival/cohort/outcomes.tsv",
    output:
        **SURV_OUT,
    log:
        f"results/logs/survival/survival_job_{SURV_JOB_ID}.log",
    benchmark:
        f"results/benchmarks/survival_job/{SURV_JOB_ID}.tsv"
    wildcard_constraints:
        **SURV_WILDCARDS,
    priority: PRIORITY_LONG
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("survival_job")
    resources:
        **job_resources("survival_job"),
    params:
        cfg=SURV_CFG,
        seed=SEED,
        units=SURV_UNITS,
    script:
        "../scripts/survival_job.py"


rule survival_reference:
    input:
        covariates="results/survival/cohort/covariates.parquet",
        outcomes="results/survival/cohort/outcomes.tsv",
    output:
        coxph="results/survival/{endpoint}/{scenario}/reference/coxph.tsv",
        km="results/survival/{endpoint}/{scenario}/reference/km.tsv",
        check="results/survival/{endpoint}/{scenario}/reference/check.json",
        figure="results/survival/{endpoint}/{scenario}/reference/km.png",
    log:
        "results/logs/survival/survival_reference_{endpoint}_{scenario}.log",
    benchmark:
        "results/benchmarks/survival_reference/{endpoint}_{scenario}.tsv"
    wildcard_constraints:
        **SURV_WILDCARDS,
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("survival_reference")
    resources:
        **job_resources("survival_reference"),
    params:
        cfg=SURV,
        seed=SEED,
    script:
        "../scripts/survival_reference.py"


rule survival_report:
    input:
        info="results/survival/cohort/info.json",
        covariates="results/survival/cohort/covariates.parquet",
        outcomes="results/survival/cohort/outcomes.tsv",
        results=[SW.job_path(*j, "result.json") for j in SURV_JOBS],
        timing=[
            f"results/benchmarks/survival/{e}/{sc}/{st}/rep{r}/result.json"
            for e, sc, st, r in SURV_JOBS
        ],
        predictions=[SW.job_path(*j, 0, "predictions.tsv") for j in SURV_PRED],
        checks=[f"results/survival/{e}/{s}/reference/check.json" for e, s in SURV_REF],
        coxph=[f"results/survival/{e}/{s}/reference/coxph.tsv" for e, s in SURV_REF],
        km_figures=[f"results/survival/{e}/{s}/reference/km.png" for e, s in SURV_REF],
        length=[SURV_LENGTH] if Path(SURV_LENGTH).exists() else [],
    output:
        section="results/report/sections/survival.json",
        results="results/survival/all_results.tsv",
        results_timing="results/benchmarks/survival/all_results.tsv",
        wall_time="results/benchmarks/survival/wall_time.json",
        summary=report("results/survival/summary.tsv", **SURV_REPORT),
        checks="results/survival/reference_checks.tsv",
        preprocess="results/survival/preprocess_federated_vs_pooled.tsv",
        length="results/survival/training_length.tsv",
        tables=[
            f"results/survival/{e}/{t}.tsv"
            for e in SURV.get("endpoints", [])
            for t in ("table_8_1", "table_8_2", "table_8_3", "km_logrank")
        ],
        figures=report(
            [
                f"results/survival/{e}/km_risk_groups.png"
                for e in SURV.get("endpoints", [])
            ],
            **SURV_REPORT,
        ),
        centre_figures=report(
            [
                f"results/survival/{e}/fig_8_7_centres.png"
                for e in SURV.get("endpoints", [])
            ],
            **SURV_REPORT,
        ),
        centre_tables=[
            f"results/survival/{e}/centres.tsv" for e in SURV.get("endpoints", [])
        ],
    log:
        "results/logs/survival/survival_report.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("survival_report")
    resources:
        **job_resources("survival_report"),
    params:
        cfg=SURV,
        prep=config["data"]["federated"],
        seed=SEED,
        pred_jobs=SURV_PRED,
    script:
        "../scripts/survival_report.py"


if enabled("survival"):
    TARGETS += ["results/report/sections/survival.json"]
    REPORT_SECTIONS.append("results/report/sections/survival.json")
