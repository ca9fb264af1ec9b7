"""Rule `decentral_eda`: seed 004 chapter 3 (Tables 3.1–3.4, Figs 3.1–3.2), thesis beside ours."""

from _common import run

from fedclust.data import heart
from fedclust.decentral import eda
from fedclust.io import read_table, save_figure, write_table


def main() -> None:
    raw, _ = heart.load_from_config(snakemake.params.heart)
    feats = read_table(snakemake.input.features)
    obs = read_table(snakemake.input.obs).loc[feats.index]
    out = snakemake.output
    write_table(out.table_3_1, eda.table_3_1(obs))
    write_table(out.table_3_2, eda.table_3_2(raw))
    write_table(out.table_3_3, eda.table_3_3(raw))
    write_table(out.table_3_4, eda.table_3_4(obs))
    corr = eda.spearman(feats, obs)
    write_table(out.spearman, eda.target_correlations(corr))
    save_figure(eda.figure_violins(feats, obs), out.fig_3_1)
    save_figure(eda.figure_spearman(corr), out.fig_3_2)


run(main, snakemake)
