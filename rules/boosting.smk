# Stage: boosting (seed 003 ch. 10, D6.2 chapter 10; issue 26): federated gradient tree boosting
# (histogram protocol, D6.2's top-S vote, Flower-style bagging / cyclic) against pooled XGBoost.
# One job for every unit (boosting.fanout: all), per dataset (dataset) or per (dataset, split,
# scheme, repetition) (unit); boosting_report merges the job tables. See docs/ARCHITECTURE.md.
from fedclust.admm import workflow as BOOST_ADMM
from fedclust.boosting import workflow as BOOST_W

BOOST = config.get("boosting", {})
BOOST_GROUPS = BOOST_W.groups(BOOST) if enabled("boosting") else []
if enabled("boosting"):
    try:
        BOOST_W.check(config)
    except ConfigError as err:
        sys.exit(f"fedclust: invalid configuration\n{err}")
BOOST_REPORT = {"caption": "../report/boosting.rst", "category": "Boosting"}


rule boosting_run:
    input:
        unpack(lambda wc: BOOST_W.dataset_inputs(BOOST, wc.dataset)),
    output:
        metrics="results/boosting/runs/{dataset}/{group}/metrics.tsv",
        messages="results/boosting/runs/{dataset}/{group}/messages.tsv",
        timing="results/benchmarks/boosting/runs/{dataset}/{group}.tsv",
    log:
        "results/logs/boosting/boosting_run_{dataset}_{group}.log",
    benchmark:
        "results/benchmarks/boosting_run/{dataset}/{group}.tsv"
    wildcard_constraints:
        dataset="[a-z_]+",
        group="[A-Za-z0-9_.]+",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("boosting_run")
    resources:
        **job_resources("boosting_run"),
    params:
        cfg=BOOST,
        units=lambda wc: BOOST_W.group_units(BOOST, wc.dataset, wc.group),
        seed=SEED,
        heart=config["data"].get("heart", {}),
        mds_source=BOOST_ADMM.mds_source(config["data"]),
        data_splits=config["data"].get("splits", {}),
    script:
        "../scripts/boosting_run.py"


rule boosting_report:
    input:
        metrics=[f"{BOOST_W.run_dir(d, g)}/metrics.tsv" for d, g in BOOST_GROUPS],
        messages=[f"{BOOST_W.run_dir(d, g)}/messages.tsv" for d, g in BOOST_GROUPS],
        timing=[BOOST_W.timing_path(d, g) for d, g in BOOST_GROUPS],
    output:
        metrics="results/boosting/tables/metrics.tsv",
        gap=report("results/boosting/tables/gap.tsv", **BOOST_REPORT),
        summary=report("results/boosting/tables/summary.tsv", **BOOST_REPORT),
        exactness=report("results/boosting/tables/exactness.tsv", **BOOST_REPORT),
        messages="results/boosting/tables/messages.tsv",
        time="results/benchmarks/boosting/time_per_tree.tsv",
        figure=report("results/boosting/figures/gap_vs_s.png", **BOOST_REPORT),
        section="results/report/sections/boosting.json",
    log:
        "results/logs/boosting/boosting_report.log",
    benchmark:
        "results/benchmarks/boosting_report.tsv"
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("boosting_report")
    resources:
        **job_resources("boosting_report"),
    params:
        cfg=BOOST,
    script:
        "../scripts/boosting_report.py"


if enabled("boosting"):
    TARGETS += ["results/report/sections/boosting.json"]
    REPORT_SECTIONS.append("results/report/sections/boosting.json")
