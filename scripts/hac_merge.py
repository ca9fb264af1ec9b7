"""Rule `hac_merge`: the parts of one cohort → its gradual / simultaneous / projection / cuts
tables, in the rows and order of the all-in-one job (issue 14; read by `hac_report`)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
from _common import run  # noqa: E402

from fedclust.hac import workflow as wf  # noqa: E402
from fedclust.io import read_table, write_result_and_benchmark, write_table  # noqa: E402


def main() -> None:
    inp, out, cfg = snakemake.input, snakemake.output, snakemake.params.cfg
    cohort = snakemake.wildcards.cohort

    def tabs(paths) -> list:  # noqa: ANN001
        return [read_table(p) for p in paths]

    grad = wf.merge_rows(tabs(inp.gradual))
    write_result_and_benchmark(out.gradual, out.gradual_bench, grad)
    write_table(out.simultaneous, wf.merge_rows(tabs(inp.simultaneous)), index=False)
    cuts = wf.merge_cuts(tabs(inp.gradual_cuts), tabs(inp.simultaneous_cuts), cohort)
    write_table(out.cuts, cuts, index=False)
    proj = wf.merge_projection(tabs(inp.projection), cfg)
    write_result_and_benchmark(out.projection, out.projection_bench, proj)


run(main, snakemake)
