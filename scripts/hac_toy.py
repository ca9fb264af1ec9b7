"""Rule `hac_toy`: thesis toy experiments (Figs 4.1-4.2, 4.8-4.10)."""

from _common import run

from fedclust.hac import experiments as ex
from fedclust.io import write_table


def main() -> None:
    cfg, seed = snakemake.params.cfg, int(snakemake.params.seed)
    toy, links = cfg["toy"], list(cfg["linkages"])
    out = snakemake.output
    bimodal_links = [m for m in links if m in ("single", "complete", "average")]
    write_table(
        out.bimodal,
        ex.toy_bimodal(seed, toy["runs"], bimodal_links, toy["n_min"]),
        index=False,
    )
    write_table(
        out.projection,
        ex.toy_projection(seed, toy["runs"], links, toy["sketch_sizes"], toy["n"], toy["dim"]),
        index=False,
    )
    write_table(
        out.min_sketch,
        ex.toy_min_sketch(
            seed,
            toy["spread_runs"],
            links,
            toy["sketch_sizes"],
            toy["spreads"],
            toy["spread_points"],
            toy["dim"],
        ),
        index=False,
    )


run(main, snakemake)
