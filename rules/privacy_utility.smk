# Stage: privacy_utility (issue 24) — secure aggregation and differential privacy measured: every
# federated method's headline metric over epsilon (seeds, spread) beside its pooled and isolated
# baselines, the seed-001 known input-output attack over epsilon, and the epsilon each centre
# spent. One job per method (privacy_utility.fanout: method, thesis.yaml) or one job running
# every method (fanout: all, the default config; same numbers), one report job.
from fedclust.privacy_utility import workflow as PUW

PU = config.get("privacy_utility", {})
PU_METHODS = PUW.methods(PU) if enabled("privacy_utility") else []
PU_GROUPED = PUW.fanout(PU) == "all"
PU_UNIT = "all" if PU_GROUPED else "{method}"
PU_REPORT = {"caption": "../report/privacy_utility.rst", "category": "Privacy-utility"}


rule privacy_utility_run:
    input:
        unpack(lambda wc: PUW.job_inputs(PU, wc)),
    output:
        **PUW.unit_outputs(PU_METHODS if PU_GROUPED else None),
    log:
        f"results/logs/privacy_utility/privacy_utility_run_{PU_UNIT}.log",
    benchmark:
        f"results/benchmarks/privacy_utility_run/{PU_UNIT}.tsv"
    wildcard_constraints:
        method="|".join(PUW.METHODS),
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("privacy_utility_run")
    resources:
        **job_resources("privacy_utility_run"),
    params:
        cfg=PU,
        methods=lambda wc: PUW.job_methods(PU, wc),
        config=lambda wc: {
            k: config.get(k, {})
            for k in ("dec", "survival", "decentral", "admm", "boosting", "generative")
        },
        seed=SEED,
    script:
        "../scripts/privacy_utility_run.py"


rule privacy_utility_report:
    input:
        curve=expand("results/privacy_utility/{method}/curve.tsv", method=PU_METHODS),
        budget=expand("results/privacy_utility/{method}/budget.tsv", method=PU_METHODS),
    output:
        curves=report("results/privacy_utility/tables/curves.tsv", **PU_REPORT),
        summary=report("results/privacy_utility/tables/summary.tsv", **PU_REPORT),
        thresholds=report("results/privacy_utility/tables/thresholds.tsv", **PU_REPORT),
        budget=report("results/privacy_utility/tables/budget.tsv", **PU_REPORT),
        figures=report(
            expand("results/privacy_utility/figures/{method}.png", method=PU_METHODS),
            **PU_REPORT,
        ),
        section="results/report/sections/privacy_utility.json",
    log:
        "results/logs/privacy_utility/privacy_utility_report.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("privacy_utility_report")
    resources:
        **job_resources("privacy_utility_report"),
    params:
        cfg=PU,
        methods=PU_METHODS,
    script:
        "../scripts/privacy_utility_report.py"


if enabled("privacy_utility"):
    TARGETS += ["results/report/sections/privacy_utility.json"]
    REPORT_SECTIONS.append("results/report/sections/privacy_utility.json")
