# The report: one static HTML page from every stage's section file.


rule report:
    input:
        sections=REPORT_SECTIONS,
    output:
        html=report(
            "results/report/index.html",
            caption="../report/index.rst",
            category="Report",
        ),
    log:
        "results/logs/report.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("report")
    resources:
        **job_resources("report"),
    params:
        title=config["report"]["title"],
        config_name=config["report"]["config_name"],
    script:
        "../scripts/report.py"
