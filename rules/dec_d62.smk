# Stage: dec — D6.2 chapter 7's own experiments (seed 003 §6): Table 7.1's configurations, the
# k × clients sweep, the G metric and the comparison with an HDP topic model on the same binary
# MDS features. One job per unit (dec.d62.fanout: unit) or one for all units (all); the HDP is
# one pooled job; dec_d62_report merges them into results/dec/d62/ and its report section.
from fedclust.dec.d62 import workflow as D62W

D62 = config.get("dec", {}).get("d62", {})
D62_ON = D62W.on(config)
D62_UNITS = D62W.units(D62) if D62_ON else []
D62_ALL = D62W.fanout(D62) == "all"
D62_OUT = {
    name.split(".")[0]: (
        [D62W.unit_path(u, name) for u in D62_UNITS]
        if D62_ALL
        else D62W.unit_path("{unit}", name)
    )
    for name in D62W.FILES
}
D62_JOB = "all" if D62_ALL else "{unit}"
D62_HDP = D62_ON and D62W.hdp_on(D62)
D62_REPORT = {
    "caption": "../report/dec_d62.rst",
    "category": "DEC",
    "subcategory": "D6.2 ch. 7",
}


rule dec_d62_unit:
    input:
        features="results/data/mds/features.parquet",
    output:
        **D62_OUT,
    log:
        f"results/logs/dec/dec_d62_unit_{D62_JOB}.log",
    benchmark:
        f"results/benchmarks/dec_d62_unit/{D62_JOB}.tsv"
    wildcard_constraints:
        unit="[A-Za-z0-9]+_k[0-9]+_n[0-9]+",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_d62_unit")
    resources:
        **job_resources("dec_d62_unit"),
    params:
        cfg=D62,
        seed=SEED,
        units=lambda wc: D62_UNITS if D62_ALL else [wc.unit],
    script:
        "../scripts/dec_d62_unit.py"


rule dec_d62_hdp:
    input:
        features="results/data/mds/features.parquet",
    output:
        labels="results/dec/d62/hdp/labels.tsv",
        theta="results/dec/d62/hdp/theta.tsv",
        info="results/dec/d62/hdp/info.json",
    log:
        "results/logs/dec/dec_d62_hdp.log",
    benchmark:
        "results/benchmarks/dec_d62_hdp/hdp.tsv"
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_d62_hdp")
    resources:
        **job_resources("dec_d62_hdp"),
    params:
        cfg=D62,
        seed=SEED,
    script:
        "../scripts/dec_d62_hdp.py"


rule dec_d62_report:
    input:
        features="results/data/mds/features.parquet",
        result=[D62W.unit_path(u, "result.json") for u in D62_UNITS],
        curves=[D62W.unit_path(u, "curves.tsv") for u in D62_UNITS],
        labels=[D62W.unit_path(u, "labels.tsv") for u in D62_UNITS],
        ledger=[D62W.unit_path(u, "ledger.tsv") for u in D62_UNITS],
        hdp=["results/dec/d62/hdp/labels.tsv"] if D62_HDP else [],
        hdp_info=["results/dec/d62/hdp/info.json"] if D62_HDP else [],
    output:
        section="results/report/sections/dec_d62.json",
        units=report("results/dec/d62/tables/units.tsv", **D62_REPORT),
        table_7_1="results/dec/d62/tables/table_7_1.tsv",
        g_norm="results/dec/d62/tables/g_by_unitnorm.tsv",
        hdp="results/dec/d62/tables/hdp_comparison.tsv",
        headline="results/dec/d62/tables/headline.tsv",
        messages="results/dec/d62/tables/messages.tsv",
        fig_sweep=report("results/dec/d62/figures/fig_7_2_7_4.png", **D62_REPORT),
        fig_clients=report("results/dec/d62/figures/fig_7_5_7_7.png", **D62_REPORT),
        fig_hdp=report(
            [
                f"results/dec/d62/figures/fig_hdp_k{k}.png"
                for k in (D62.get("hdp", {}).get("k", []) if D62_HDP else [])
            ],
            **D62_REPORT,
        ),
    log:
        "results/logs/dec/dec_d62_report.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_d62_report")
    resources:
        **job_resources("dec_d62_report"),
    params:
        cfg=D62,
        seed=SEED,
        units=D62_UNITS,
        mds_source=config["data"]["mds"]["source"],
        hdp_note=D62W.hdp_note(D62) if D62_ON else "",
    script:
        "../scripts/dec_d62_report.py"


if D62_ON:
    TARGETS += ["results/report/sections/dec_d62.json"]
    REPORT_SECTIONS.append("results/report/sections/dec_d62.json")
