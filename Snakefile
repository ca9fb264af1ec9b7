# fedclust — federated clustering and learning on sensitive biomedical data.
#
#   snakemake --cores 2                                   # default config: offline, embedded data
#   snakemake --cores 8 --configfile config/thesis.yaml   # full reproduction (needs downloads)
#   snakemake --profile profiles/slurm --configfile config/thesis.yaml
#
# Every stage lives in rules/<stage>.smk and registers (1) its final targets in TARGETS and
# (2) its report section file in REPORT_SECTIONS; `rule all` and the report collect both.
import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

sys.path.insert(0, str(Path(workflow.basedir) / "src"))  # use this checkout's library

from fedclust.config import load_yaml, resolve_bases, validate_config  # noqa: E402
from fedclust.errors import ConfigError  # noqa: E402


configfile: "config/config.yaml"


report: "report/workflow.rst"


try:
    # duplicate keys / YAML errors with file, line and column
    for _cf in workflow.configfiles:
        load_yaml(_cf)
    # `base: thesis.yaml` in a --configfile (config/thesis-smoke.yaml): that file first
    resolve_bases(
        config,
        workflow.configfiles,
        workflow.config_settings.configfiles,
        workflow.config_settings.config,
    )
    validate_config(
        config, Path(workflow.basedir) / "config" / "schema.yaml", source="config"
    )
except ConfigError as err:
    sys.exit(f"fedclust: invalid configuration\n{err}")

TARGETS: list = []
REPORT_SECTIONS: list = []


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/hac.smk"
include: "rules/attacks.smk"
include: "rules/dec.smk"
include: "rules/dec_figures.smk"
include: "rules/dec_d62.smk"
include: "rules/decentral.smk"
include: "rules/admm.smk"
include: "rules/deployment.smk"
include: "rules/perf.smk"
include: "rules/fedcref.smk"
include: "rules/survival.smk"
include: "rules/privacy.smk"
include: "rules/boosting.smk"
include: "rules/generative.smk"
include: "rules/bayes.smk"
include: "rules/privacy_utility.smk"
include: "rules/report.smk"


rule all:
    default_target: True
    input:
        TARGETS,
        "results/report/index.html",
