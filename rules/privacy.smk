# Stage: privacy (issue 22) — the attack suite: every protocol attacked by an honest-but-curious
# server from the messages it recorded, protections off vs the centres' policy; one small job.


rule privacy_report:
    output:
        table="results/privacy/attack_suite.tsv",
        figure="results/privacy/attack_suite.png",
        section="results/report/sections/privacy.json",
    log:
        "results/logs/privacy/privacy_report.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("privacy_report")
    resources:
        **job_resources("privacy_report"),
    params:
        cfg=config.get("privacy", {}),
    script:
        "../scripts/privacy_report.py"


if enabled("privacy"):
    TARGETS += ["results/report/sections/privacy.json"]
    REPORT_SECTIONS.append("results/report/sections/privacy.json")
