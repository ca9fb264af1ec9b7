# Opt-in (issue 30 B.1; config `deployment`, off in every shipped config): one registered stage
# on a Flower deployment on this machine (a SuperLink and one SuperNode per centre on 127.0.0.1,
# TLS and SuperNode authentication: `fedclust deploy`'s recipe) with the workflow's own centre
# split, beside the in-process run of the same centre files (comparison.json: equal).
from fedclust import deployrun as DEPLOYRUN

DEPLOYMENT = config.get("deployment", {})
DEPLOY_STAGE = DEPLOYMENT.get("stage", "admm")
DEPLOY_TASK = None
if enabled("deployment"):
    try:
        DEPLOYRUN.check(config)
    except ConfigError as err:
        sys.exit(f"fedclust: invalid configuration\n{err}")
    DEPLOY_TASK = DEPLOYRUN.task_name(config)
    TARGETS.append(f"results/deployment/{DEPLOY_STAGE}/comparison.json")


rule deployment_run:
    input:
        unpack(lambda wc: DEPLOYRUN.inputs(config)),
    output:
        history="results/deployment/{stage}/history.tsv",
        ledger="results/deployment/{stage}/ledger.tsv",
        coefficients="results/deployment/{stage}/coefficients.tsv",
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
        dep=DEPLOYMENT,
        task=DEPLOY_TASK,
        admm=config.get("admm", {}),
        seed=SEED,
        mds_source=ADMM_WF.mds_source(config["data"]),
    script:
        "../scripts/deployment_run.py"
