"""Rule `privacy_utility_report`: merged curves, summary, thresholds, ε budget, one figure per
method and the section."""

import pandas as pd
from _common import run

from fedclust.io import save_figure, write_table
from fedclust.privacy_utility import report as R
from fedclust.report import Section, headlines, write_section


def main() -> None:
    cfg, out, methods = snakemake.params.cfg, snakemake.output, list(snakemake.params.methods)
    curves = pd.concat([pd.read_csv(p, sep="\t") for p in snakemake.input.curve], ignore_index=True)
    budgets = [pd.read_csv(p, sep="\t") for p in snakemake.input.budget]
    budget = (
        pd.concat([b for b in budgets if len(b)], ignore_index=True)
        if any(len(b) for b in budgets)
        else budgets[0]
    )
    summ = R.summary(curves)
    thr = R.thresholds(summ, budget, float(cfg["within"]))
    write_table(out.curves, curves, index=False)
    write_table(out.summary, summ, index=False)
    write_table(out.thresholds, thr, index=False)
    write_table(out.budget, R.budget_table(budget), index=False)
    figures = []
    for method, path in zip(methods, out.figures, strict=True):
        save_figure(R.figure(method, summ), path)
        figures.append(
            {
                "path": path,
                "reproduces": "issue 24 (no source figure)",
                "caption": R.caption(method, cfg),
            }
        )
    tables = [
        {"path": out.thresholds, "caption": R.THRESHOLD_CAPTION.format(within=cfg["within"])},
        {
            "path": out.summary,
            "caption": "Every method's metrics per arm and ε: mean, sd and "
            "number of seeds (ε = inf: no noise; pooled and isolated: non-private baselines).",
        },
        {
            "path": out.budget,
            "caption": "ε spent per centre per method at each target ε (mean "
            "over seeds): the accountant's value for all the releases of the run (Opacus' RDP "
            "analysis), its mechanism, number of releases and noise multiplier.",
        },
        {"path": out.curves, "caption": "Every run: method, arm, ε, seed, metric, value."},
    ]
    write_section(
        out.section,
        Section(
            id="privacy_utility",
            title="Privacy–utility: secure aggregation and differential privacy (issue 24)",
            order=95,
            text=R.section_text(cfg, methods),
            figures=figures,
            tables=tables,
            headline=headlines.privacy_utility(tables, figures),
        ),
    )


run(main, snakemake)
