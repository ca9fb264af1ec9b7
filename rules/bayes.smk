# Stage: bayes (seed 003 ch. 4, D6.2): Bayes by Backprop on MNIST (Table 4.1, Figs 4.1/4.2),
# PVI and VIRTUAL-style federated BBB with SGD / dropout / FedAvg baselines (Fig 4.4) and the
# conjugate PVI check. One job per central unit (prior setting / baseline) and per federated
# unit (method x client split), or one job per rule for all of them (bayes.fanout: all).
from fedclust.bayes import workflow as BAYES_W

BAYES = config.get("bayes", {})
BAYES_CENTRAL = list(BAYES_W.central_specs(BAYES)) if BAYES else []
BAYES_FEDERATED = list(BAYES_W.federated_specs(BAYES)) if BAYES else []
BAYES_GROUPED = BAYES_W.fanout(BAYES) == "all"
BAYES_REPORT = {"caption": "../report/bayes.rst", "category": "Bayes"}


rule bayes_data:
    input:
        unpack(lambda wc: BAYES_W.data_inputs(BAYES, config["data"]["download_dir"])),
    output:
        data="results/bayes/data.npz",
        info="results/bayes/data.json",
    log:
        "results/logs/bayes/bayes_data.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("bayes_data")
    resources:
        **job_resources("bayes_data"),
    params:
        cfg=BAYES,
        seed=SEED,
    script:
        "../scripts/bayes_data.py"


rule bayes_central:
    input:
        data="results/bayes/data.npz",
    output:
        **BAYES_W.unit_outputs(
            "central", ["curve.tsv", "result.json"], BAYES_CENTRAL, BAYES_GROUPED
        ),
    log:
        "results/logs/bayes/bayes_central_"
        + ("all" if BAYES_GROUPED else "{unit}")
        + ".log",
    benchmark:
        "results/benchmarks/bayes_central/"
        + ("all" if BAYES_GROUPED else "{unit}")
        + ".tsv"
    wildcard_constraints:
        unit="[A-Za-z0-9_]+",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("bayes_central")
    resources:
        **job_resources("bayes_central"),
    params:
        cfg=BAYES,
        seed=SEED,
        units=lambda wc: BAYES_CENTRAL if BAYES_GROUPED else [wc.unit],
    script:
        "../scripts/bayes_central.py"


rule bayes_federated:
    input:
        data="results/bayes/data.npz",
    output:
        **BAYES_W.unit_outputs(
            "federated",
            ["rounds.tsv", "ledger.tsv", "result.json"],
            BAYES_FEDERATED,
            BAYES_GROUPED,
        ),
    log:
        "results/logs/bayes/bayes_federated_"
        + ("all" if BAYES_GROUPED else "{unit}")
        + ".log",
    benchmark:
        "results/benchmarks/bayes_federated/"
        + ("all" if BAYES_GROUPED else "{unit}")
        + ".tsv"
    wildcard_constraints:
        unit="[A-Za-z0-9_]+",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("bayes_federated")
    resources:
        **job_resources("bayes_federated"),
    params:
        cfg=BAYES,
        seed=SEED,
        units=lambda wc: BAYES_FEDERATED if BAYES_GROUPED else [wc.unit],
    script:
        "../scripts/bayes_federated.py"


rule bayes_report:
    input:
        info="results/bayes/data.json",
        central_curve=expand("results/bayes/central/{u}/curve.tsv", u=BAYES_CENTRAL),
        central_result=expand("results/bayes/central/{u}/result.json", u=BAYES_CENTRAL),
        federated_rounds=expand(
            "results/bayes/federated/{u}/rounds.tsv", u=BAYES_FEDERATED
        ),
        federated_ledger=expand(
            "results/bayes/federated/{u}/ledger.tsv", u=BAYES_FEDERATED
        ),
        federated_result=expand(
            "results/bayes/federated/{u}/result.json", u=BAYES_FEDERATED
        ),
    output:
        table_4_1=report("results/bayes/tables/table_4_1.tsv", **BAYES_REPORT),
        virtual=report("results/bayes/tables/virtual.tsv", **BAYES_REPORT),
        central="results/bayes/tables/central.tsv",
        federated=report("results/bayes/tables/federated.tsv", **BAYES_REPORT),
        heterogeneity=report("results/bayes/tables/heterogeneity.tsv", **BAYES_REPORT),
        conjugate="results/bayes/tables/conjugate.tsv",
        messages="results/bayes/tables/messages.tsv",
        fig_4_1=report("results/bayes/figures/fig_4_1_gaussian.png", **BAYES_REPORT),
        fig_4_2=report("results/bayes/figures/fig_4_2_mixture.png", **BAYES_REPORT),
        fig_4_4=report("results/bayes/figures/fig_4_4_federated.png", **BAYES_REPORT),
        heterogeneity_fig=report(
            "results/bayes/figures/heterogeneity.png", **BAYES_REPORT
        ),
        conjugate_fig="results/bayes/figures/conjugate.png",
        section="results/report/sections/bayes.json",
    log:
        "results/logs/bayes/bayes_report.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("bayes_report")
    resources:
        **job_resources("bayes_report"),
    params:
        cfg=BAYES,
        central=BAYES_CENTRAL,
        federated=BAYES_FEDERATED,
    script:
        "../scripts/bayes_report.py"


if enabled("bayes"):
    TARGETS += ["results/report/sections/bayes.json"]
    REPORT_SECTIONS.append("results/report/sections/bayes.json")
