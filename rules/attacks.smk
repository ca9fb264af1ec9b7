# Stage: attacks on what federated centers share (seed 001 §3.3.4.2, §4.4; spec §8).
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


rule attack_known_io:
    input:
        counts="results/data/rnaseq/{cohort}/counts.parquet",
    output:
        table="results/attacks/known_io/{cohort}.tsv",
    log:
        "results/logs/attacks/attack_known_io_{cohort}.log",
    wildcard_constraints:
        cohort="[A-Z0-9]+",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("attack_known_io")
    resources:
        **job_resources("attack_known_io"),
    params:
        cfg=ATT.get("known_io"),
        seed=SEED,
    script:
        "../scripts/attacks_known_io.py"


rule attack_property_inference:
    input:
        counts=expand(ATT_RNASEQ, cohort=ATT_SEX_COHORTS, what="counts.parquet"),
        obs=expand(ATT_RNASEQ, cohort=ATT_SEX_COHORTS, what="obs.tsv"),
    output:
        accuracy="results/attacks/property_inference/accuracy.tsv",
        tests="results/attacks/property_inference/ttests.tsv",
    log:
        "results/logs/attacks/attack_property_inference.log",
    benchmark:
        "results/benchmarks/attack_property_inference/all.tsv"
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("attack_property_inference")
    resources:
        **job_resources("attack_property_inference"),
    params:
        cfg=ATT.get("property_inference"),
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
        errors="results/attacks/reconstruction/errors.tsv.gz",
        pinv="results/attacks/reconstruction/pinv.tsv",
        combined="results/attacks/reconstruction/combined.tsv",
        tests="results/attacks/reconstruction/ttests.tsv",
    log:
        "results/logs/attacks/attack_reconstruction.log",
    benchmark:
        "results/benchmarks/attack_reconstruction/all.tsv"
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("attack_reconstruction")
    resources:
        **job_resources("attack_reconstruction"),
    params:
        cfg=ATT.get("reconstruction"),
        cohorts=ATT_COHORTS,
        device=ATT.get("device", "auto"),
        seed=SEED,
    script:
        "../scripts/attacks_reconstruction.py"


rule attacks_report:
    input:
        known_io=expand("results/attacks/known_io/{cohort}.tsv", cohort=ATT_COHORTS),
        pi_accuracy=rules.attack_property_inference.output.accuracy,
        pi_tests=rules.attack_property_inference.output.tests,
        rec_errors=rules.attack_reconstruction.output.errors,
        rec_pinv=rules.attack_reconstruction.output.pinv,
        rec_combined=rules.attack_reconstruction.output.combined,
        rec_tests=rules.attack_reconstruction.output.tests,
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
