# Stage: admm (seed 003 §2, D6.2 chapter 3): centralized and consensus-distributed ADMM for
# ridge / LASSO / logistic / linear SVM. One job per (task, mode), or one for all of them
# (admm.fanout: all, issue 15); admm_report merges them.
# (Issue 12 groups this under `survival`; it is its own stage so both fan out independently.)
from fedclust.admm import workflow as ADMM_WF

ADMM = config.get("admm", {})
ADMM_TASKS = ADMM.get("tasks", {})
ADMM_UNITS = ADMM_WF.runs(ADMM)
ADMM_RUNS = [f"{t}/{m}" for t, m in ADMM_UNITS]
ADMM_GROUPED = ADMM_WF.fanout(ADMM) == "all"
ADMM_RUN_DIRS = (
    [f"results/admm/runs/{r}" for r in ADMM_RUNS]
    if ADMM_GROUPED
    else ["results/admm/runs/{task}/{admm_mode}"]
)
ADMM_RUN_ID = "all" if ADMM_GROUPED else "{task}_{admm_mode}"
# each run's result with its timing (the result.json beside it has none: byte-identical runs)
ADMM_BENCH_DIRS = [
    d.replace("results/", "results/benchmarks/", 1) for d in ADMM_RUN_DIRS
]
if enabled("admm"):
    try:
        ADMM_WF.check_tasks(ADMM, config["data"])
    except ConfigError as err:
        sys.exit(f"fedclust: invalid configuration\n{err}")
ADMM_REPORT = {"caption": "../report/admm.rst", "category": "ADMM"}


rule admm_run:
    input:
        unpack(
            lambda wc: (
                ADMM_WF.group_inputs(ADMM_TASKS)
                if ADMM_GROUPED
                else ADMM_WF.task_inputs(ADMM_TASKS[wc.task])
            )
        ),
    output:
        history=[f"{d}/history.tsv" for d in ADMM_RUN_DIRS],
        result=[f"{d}/result.json" for d in ADMM_RUN_DIRS],
        ledger=[f"{d}/ledger.tsv" for d in ADMM_RUN_DIRS],
        timing=[f"{d}/result.json" for d in ADMM_BENCH_DIRS],
    log:
        f"results/logs/admm/admm_run_{ADMM_RUN_ID}.log",
    benchmark:
        f"results/benchmarks/admm_run/{ADMM_RUN_ID}.tsv"
    wildcard_constraints:
        admm_mode="centralized|distributed",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("admm_run")
    resources:
        **job_resources("admm_run"),
    params:
        cfg=ADMM,
        units=lambda wc: ADMM_UNITS if ADMM_GROUPED else [(wc.task, wc.admm_mode)],
        seed=SEED,
        mds_source=ADMM_WF.mds_source(config["data"]),
    script:
        "../scripts/admm_run.py"


rule admm_report:
    input:
        history=expand("results/admm/runs/{run}/history.tsv", run=ADMM_RUNS),
        result=expand("results/admm/runs/{run}/result.json", run=ADMM_RUNS),
        ledger=expand("results/admm/runs/{run}/ledger.tsv", run=ADMM_RUNS),
        timing=expand("results/benchmarks/admm/runs/{run}/result.json", run=ADMM_RUNS),
    output:
        summary=report("results/admm/tables/summary.tsv", **ADMM_REPORT),
        summary_timing="results/benchmarks/admm/tables/summary.tsv",
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
