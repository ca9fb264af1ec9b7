"""Rule `dec_figures_report`: report section of the extra seed 000 figures and the size curve."""

from _common import run

from fedclust.dec.figures_report import build_figures_section


def main() -> None:
    p = snakemake.params
    build_figures_section(
        snakemake.output.section,
        confusion=list(p.confusion),
        states=list(p.states),
        fed=list(p.fed),
        mnist_bmnist=bool(p.mnist_bmnist),
        size_curve=str(p.size_curve),
        reduced=bool(p.reduced),
        source=str(p.source),
        headline_path=snakemake.output.headline,
    )


run(main, snakemake)
