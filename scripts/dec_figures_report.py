"""Rule `dec_figures_report`: report section of the extra seed 000 figures and the size curve."""

from _common import run

from fedclust.dec.figures_report import build_figures_section


def main() -> None:
    p = snakemake.params
    build_figures_section(
        snakemake.output.section,
        list(p.confusion),
        list(p.states),
        list(p.fed),
        bool(p.mnist_bmnist),
        str(p.size_curve),
        bool(p.reduced),
        str(p.source),
        snakemake.output.headline,
    )


run(main, snakemake)
