# Shared helpers for all rule files. Stage rule files append to TARGETS and REPORT_SECTIONS.
SEED = int(config["seed"])
SCRIPTS = Path(workflow.basedir) / "scripts"


def enabled(stage):
    """Whether a stage is switched on in config (``<stage>.enabled``)."""
    return bool(config.get(stage, {}).get("enabled", False))
