# Stage: admm (seed 003 §2, D6.2 chapter 3): centralized and consensus-distributed ADMM for
# ridge / LASSO / logistic / linear SVM. One job per (task, mode); admm_report merges them.
# (Issue 12 groups this under `survival`; it is its own stage so both fan out independently.)
from fedclust.convex.pipeline import check_tasks, mds_source, task_inputs

ADMM = config.get("admm", {})
ADMM_TASKS = ADMM.get("tasks", {})
ADMM_MODES = ADMM.get("modes", [])
ADMM_RUNS = [f"{t}/{m}" for t in ADMM_TASKS for m in ADMM_MODES]
if enabled("admm"):
    try:
        check_tasks(ADMM, config["data"])
    except ConfigError as err:
        sys.exit(f"fedclust: invalid configuration\n{err}")
ADMM_REPORT = {"caption": "../report/admm.rst", "category": "ADMM"}


rule admm_run:
    input:
        unpack(lambda wc: task_inputs(ADMM_TASKS[wc.task])),
    output:
        history="results/admm/runs/{task}/{admm_mode}/history.tsv",
        result="results/admm/runs/{task}/{admm_mode}/result.json",
        ledger="results/admm/runs/{task}/{admm_mode}/ledger.tsv",
    log:
        "results/logs/admm/admm_run_{task}_{admm_mode}.log",
    benchmark:
        "results/benchmarks/admm_run/{task}_{admm_mode}.tsv"
    wildcard_constraints:
        admm_mode="centralized|distributed",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("admm_run")
    resources:
        **job_resources("admm_run"),
    params:
        cfg=ADMM,
        task=lambda wc: ADMM_TASKS[wc.task],
        seed=SEED,
        mds_source=mds_source(config["data"]),
    script:
        "../scripts/admm_run.py"


rule admm_report:
    input:
        history=expand("results/admm/runs/{run}/history.tsv", run=ADMM_RUNS),
        result=expand("results/admm/runs/{run}/result.json", run=ADMM_RUNS),
        ledger=expand("results/admm/runs/{run}/ledger.tsv", run=ADMM_RUNS),
    output:
        summary=report("results/admm/tables/summary.tsv", **ADMM_REPORT),
        messages=report("results/admm/tables/messages.tsv", **ADMM_REPORT),
        figures=report(
            expand("results/admm/figures/{task}.png", task=list(ADMM_TASKS)),
            **ADMM_REPORT,
        ),
        section="results/report/sections/admm.json",
    log:
        "results/logs/admm/admm_report.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("admm_report")
    resources:
        **job_resources("admm_report"),
    params:
        cfg=ADMM,
        runs=ADMM_RUNS,
    script:
        "../scripts/admm_report.py"


if enabled("admm"):
    TARGETS += ["results/report/sections/admm.json"]
    REPORT_SECTIONS.append("results/report/sections/admm.json")
