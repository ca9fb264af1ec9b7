# Stage: attacks on what federated centers share (seed 001 §3.3.4.2, §4.4; spec §8).
# One job per (projection, run block) (issue 14): parts from fedclust.attacks.workflow, joined by
# attacks_merge into the tables attacks_report reads.
from fedclust.attacks import workflow as AW

ATT = config.get("attacks", {})
ATT_COHORTS = ATT.get("cohorts") or config["data"]["rnaseq"]["cohorts"]
ATT_SEX_COHORTS = [c for c in ATT_COHORTS if c not in ATT.get("exclude_for_sex", [])]
ATT_FIGS = {
    "fig4_14": "results/attacks/fig4_14_known_io_size_factors.png",
    "fig4_15": "results/attacks/fig4_15_known_io_vst.png",
    "fig4_16": "results/attacks/fig4_16_property_inference.png",
    "fig4_17": "results/attacks/fig4_17_reconstruction_decoders.png",
    "fig4_18": "results/attacks/fig4_18_reconstruction_pinv.png",
    "fig4_19": "results/attacks/fig4_19_reconstruction_vst_vs_sf.png",
}

ATT_RNASEQ = "results/data/rnaseq/{cohort}/{what}"
ATT_REPORT = {"caption": "../report/attacks.rst", "category": "Attacks"}


if enabled("attacks"):
    TARGETS += ["results/report/sections/attacks.json"]
    REPORT_SECTIONS.append("results/report/sections/attacks.json")


ATT_PART = "[A-Za-z0-9_-]+"
ATT_KIO = "results/attacks/known_io/parts/{cohort}/{part}.parquet"
ATT_PI = "results/attacks/property_inference/parts/{part}.parquet"
ATT_REC = "results/attacks/reconstruction/parts/{part}/{what}.parquet"


rule attack_known_io:
    input:
        counts="results/data/rnaseq/{cohort}/counts.parquet",
    output:
        table=ATT_KIO,
    log:
        "results/logs/attacks/attack_known_io/{cohort}/{part}.log",
    benchmark:
        "results/benchmarks/attack_known_io/{cohort}/{part}.tsv"
    wildcard_constraints:
        cohort="[A-Z0-9]+",
        part=ATT_PART,
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("attack_known_io")
    resources:
        **job_resources("attack_known_io"),
    params:
        cfg=ATT.get("known_io"),
        att=ATT,
        seed=SEED,
    script:
        "../scripts/attacks_known_io.py"


rule attack_property_inference:
    input:
        counts=expand(ATT_RNASEQ, cohort=ATT_SEX_COHORTS, what="counts.parquet"),
        obs=expand(ATT_RNASEQ, cohort=ATT_SEX_COHORTS, what="obs.tsv"),
    output:
        table=ATT_PI,
    log:
        "results/logs/attacks/attack_property_inference/{part}.log",
    benchmark:
        "results/benchmarks/attack_property_inference/{part}.tsv"
    wildcard_constraints:
        part=ATT_PART,
    priority: PRIORITY_LONG
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("attack_property_inference")
    resources:
        **job_resources("attack_property_inference"),
    params:
        cfg=ATT.get("property_inference"),
        att=ATT,
        cohorts=ATT_SEX_COHORTS,
        device=ATT.get("device", "auto"),
        seed=SEED,
    script:
        "../scripts/attacks_property_inference.py"


rule attack_reconstruction:
    input:
        counts=expand(ATT_RNASEQ, cohort=ATT_COHORTS, what="counts.parquet"),
        obs=expand(ATT_RNASEQ, cohort=ATT_COHORTS, what="obs.tsv"),
    output:
        errors=ATT_REC.replace("{what}", "errors"),
        combined=ATT_REC.replace("{what}", "combined"),
    log:
        "results/logs/attacks/attack_reconstruction/{part}.log",
    benchmark:
        "results/benchmarks/attack_reconstruction/{part}.tsv"
    wildcard_constraints:
        part="b[0-9]+",
    priority: PRIORITY_LONG
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("attack_reconstruction")
    resources:
        **job_resources("attack_reconstruction"),
    params:
        cfg=ATT.get("reconstruction"),
        att=ATT,
        cohorts=ATT_COHORTS,
        device=ATT.get("device", "auto"),
        seed=SEED,
    script:
        "../scripts/attacks_reconstruction.py"


rule attack_reconstruction_pinv:
    input:
        counts=expand(ATT_RNASEQ, cohort=ATT_COHORTS, what="counts.parquet"),
        obs=expand(ATT_RNASEQ, cohort=ATT_COHORTS, what="obs.tsv"),
    output:
        pinv="results/attacks/reconstruction/parts/pinv/{cohort}.parquet",
    log:
        "results/logs/attacks/attack_reconstruction_pinv/{cohort}.log",
    benchmark:
        "results/benchmarks/attack_reconstruction_pinv/{cohort}.tsv"
    wildcard_constraints:
        cohort="[A-Z0-9]+",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("attack_reconstruction_pinv")
    resources:
        **job_resources("attack_reconstruction_pinv"),
    params:
        cfg=ATT.get("reconstruction"),
        att=ATT,
        cohorts=ATT_COHORTS,
        device="cpu",
        seed=SEED,
    script:
        "../scripts/attacks_reconstruction.py"


rule attacks_merge:
    input:
        known_io=[
            ATT_KIO.format(cohort=c, part=p)
            for c in ATT_COHORTS
            for p in AW.known_io_parts(ATT)
        ],
        pi=expand(ATT_PI, part=AW.pi_parts(ATT)),
        rec_errors=expand(ATT_REC, part=AW.reconstruction_parts(ATT), what="errors"),
        rec_combined=expand(ATT_REC, part=AW.reconstruction_parts(ATT), what="combined"),
        rec_pinv=expand(
            "results/attacks/reconstruction/parts/pinv/{cohort}.parquet",
            cohort=ATT_COHORTS,
        ),
    output:
        known_io=expand("results/attacks/known_io/{cohort}.tsv", cohort=ATT_COHORTS),
        pi_accuracy="results/attacks/property_inference/accuracy.tsv",
        pi_tests="results/attacks/property_inference/ttests.tsv",
        rec_errors="results/attacks/reconstruction/errors.tsv.gz",
        rec_pinv="results/attacks/reconstruction/pinv.tsv",
        rec_combined="results/attacks/reconstruction/combined.tsv",
        rec_tests="results/attacks/reconstruction/ttests.tsv",
    log:
        "results/logs/attacks/attacks_merge.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("attacks_merge")
    resources:
        **job_resources("attacks_merge"),
    params:
        att=ATT,
        cohorts=ATT_COHORTS,
    script:
        "../scripts/attacks_merge.py"


rule attacks_report:
    input:
        known_io=rules.attacks_merge.output.known_io,
        pi_accuracy=rules.attacks_merge.output.pi_accuracy,
        pi_tests=rules.attacks_merge.output.pi_tests,
        rec_errors=rules.attacks_merge.output.rec_errors,
        rec_pinv=rules.attacks_merge.output.rec_pinv,
        rec_combined=rules.attacks_merge.output.rec_combined,
        rec_tests=rules.attacks_merge.output.rec_tests,
    output:
        **{k: report(v, **ATT_REPORT) for k, v in ATT_FIGS.items()},
        section="results/report/sections/attacks.json",
        summary=report("results/attacks/summary.tsv", **ATT_REPORT),
        known_io_ranking=report("results/attacks/known_io_ranking.tsv", **ATT_REPORT),
    log:
        "results/logs/attacks/attacks_report.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("attacks_report")
    resources:
        **job_resources("attacks_report"),
    params:
        cfg=ATT,
        cohorts=ATT_COHORTS,
        sex_cohorts=ATT_SEX_COHORTS,
        config_name=config["report"]["config_name"],
    script:
        "../scripts/attacks_report.py"
