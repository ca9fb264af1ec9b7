# Shared helpers for all rule files. Stage rule files append to TARGETS and REPORT_SECTIONS.
SEED = int(config["seed"])
SCRIPTS = Path(workflow.basedir) / "scripts"
JOB_RESOURCES = config.get("resources", {})


def enabled(stage):
    """Whether a stage is switched on in config (``<stage>.enabled``)."""
    return bool(config.get(stage, {}).get("enabled", False))


def job_spec(rule_name):
    """Config ``resources.default`` updated by ``resources.rules.<rule_name>``."""
    spec = dict(JOB_RESOURCES.get("default", {}))
    spec.update(JOB_RESOURCES.get("rules", {}).get(rule_name, {}))
    return spec


def job_resources(rule_name):
    """Resources of a rule's jobs (mem_mb, runtime in minutes, gpu only when > 0).

    Used as ``resources: **job_resources("<rule>")``; --set-resources still overrides them.
    """
    spec = job_spec(rule_name)
    spec.pop("threads", None)
    spec.pop("estimate", None)  # the expected job time: critical-path estimates only
    if not spec.get("gpu"):
        spec.pop("gpu", None)
    return spec


# The longest jobs of the default run (attacks' training, FedCRef, gradual sharing, survival)
# start as soon as their inputs exist, so they overlap with the many short jobs instead of
# forming a serial tail at the end of the run (issue 15; on SLURM: they are submitted first).
PRIORITY_LONG = 10


def job_threads(rule_name):
    """Threads of a rule's jobs (config ``resources``; capped by --cores locally)."""
    return int(job_spec(rule_name).get("threads", 1))
