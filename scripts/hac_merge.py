"""Rule `hac_merge`: the parts of one cohort → its gradual / simultaneous / projection / cuts
tables, in the rows and order of the all-in-one job (issue 14; read by `hac_report`)."""

from _common import run

from fedclust.hac import workflow as wf
from fedclust.io import read_table, write_result_and_benchmark, write_table


def main() -> None:
    inp, out, cfg = snakemake.input, snakemake.output, snakemake.params.cfg
    cohort = snakemake.wildcards.cohort

    def tabs(paths) -> list:
        return [read_table(p) for p in paths]

    grad = wf.merge_rows(tabs(inp.gradual))
    write_result_and_benchmark(out.gradual, out.gradual_bench, grad)
    write_table(out.simultaneous, wf.merge_rows(tabs(inp.simultaneous)), index=False)
    cuts = wf.merge_cuts(tabs(inp.gradual_cuts), tabs(inp.simultaneous_cuts), cohort)
    write_table(out.cuts, cuts, index=False)
    proj = wf.merge_projection(tabs(inp.projection), cfg)
    write_result_and_benchmark(out.projection, out.projection_bench, proj)


run(main, snakemake)
