# Opt-in (issue 30 B.1; config `deployment`, off in every shipped config): each stage of
# `deployment.stages` on a Flower deployment on this machine (a SuperLink and one SuperNode per
# centre on 127.0.0.1, TLS and SuperNode authentication: `fedclust deploy`'s recipe) with the
# workflow's own centre split, beside the in-process run of the same centre files
# (comparison.json: equal). One job per stage: a cluster runs them in parallel.
from fedclust import deployrun as DEPLOYRUN

if enabled("deployment"):
    try:
        DEPLOYRUN.check(config)
    except ConfigError as err:
        sys.exit(f"fedclust: invalid configuration\n{err}")
    TARGETS.extend(DEPLOYRUN.targets(config))


rule deployment_run:
    input:
        unpack(lambda wc: DEPLOYRUN.inputs(config, wc.stage)),
    output:
        ledger="results/deployment/{stage}/ledger.tsv",
        result="results/deployment/{stage}/result.tsv",
        comparison="results/deployment/{stage}/comparison.json",
        timing="results/benchmarks/deployment/{stage}.json",
    log:
        "results/logs/deployment/deployment_run_{stage}.log",
    benchmark:
        "results/benchmarks/deployment_run/{stage}.tsv"
    wildcard_constraints:
        stage="|".join(DEPLOYRUN.STAGES),
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("deployment_run")
    resources:
        **job_resources("deployment_run"),
    params:
        job=lambda wc: DEPLOYRUN.job_settings(config, wc.stage),
    script:
        "../scripts/deployment_run.py"
