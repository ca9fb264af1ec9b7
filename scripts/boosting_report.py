"""Rule `boosting_report`: merged tables, the gap-vs-S figure and the report section."""

import pandas as pd
from _common import run

from fedclust.boosting import report as R
from fedclust.io import save_figure, write_table
from fedclust.report import Section, headlines, write_section


def main() -> None:
    cfg, inp, out = snakemake.params.cfg, snakemake.input, snakemake.output
    read = lambda paths: pd.concat(  # noqa: E731
        [pd.read_csv(p, sep="\t", keep_default_na=False, na_values=[""]) for p in paths],
        ignore_index=True,
    )
    metrics, messages, timing = read(inp.metrics), read(inp.messages), read(inp.timing)
    gap, summary = R.gap_table(metrics), R.summary_table(metrics)
    write_table(out.metrics, metrics, index=False)
    write_table(out.gap, gap, index=False)
    write_table(out.summary, summary, index=False)
    write_table(out.exactness, R.exactness_table(metrics), index=False)
    write_table(out.messages, messages, index=False)
    write_table(out.time, R.time_table(timing), index=False)
    floor = int(cfg.get("min_samples", 3))
    save_figure(R.gap_figure(gap, floor), out.figure)
    p = cfg.get("params", {})
    size = (f"{cfg.get('trees')} trees of depth {p.get('max_depth')}, "
            f"{cfg.get('repetitions')} repetition(s)")  # fmt: skip
    if cfg.get("reduced", True):
        size += ", reduced size"
    figures = [{
        "path": out.figure,
        "reproduces": "seed 003 ch. 10 (D6.2 §10.2 proposes the top-S vote; it prints no "
        "numbers)",
        "caption": "AUC and log-loss of the top-S vote minus those of the exact protocol "
        "(= pooled XGBoost on the binned training rows) against S, per dataset and split, mean "
        "± SD over repetitions, on the pooled held-out rows; solid: unreported candidates "
        "score 0, dashed: second round over the union; dotted: the histogram protocol at the "
        f"centres' floor ({floor}). {size}. Data: {R.data_sources(metrics)}.",
    }]  # fmt: skip
    tables = [
        {"path": out.summary, "caption": "Per scheme over every (dataset, split, repetition): "
         "held-out AUC of the scheme and of pooled XGBoost (same rows), mean ± SD of the AUC and "
         "log-loss gap, floats a centre sends per tree, largest |probability difference| to "
         "pooled XGBoost, trees identical to XGBoost's."},
        {"path": out.gap, "caption": "Per dataset, split and scheme: AUC and log-loss, their gap "
         "to the exact protocol (mean ± SD over repetitions), floats per centre per tree (sent, "
         "received), abstentions per run."},
        {"path": out.exactness, "caption": "The histogram protocol against xgboost.train on the "
         "pooled binned rows, per run: same grid, identical trees (features, cuts, children), "
         "largest |leaf|, |margin| and |probability| difference on the held-out rows (floor 1: "
         "exact up to float32 rounding; at the centres' floor merged bins change the trees)."},
        {"path": out.time, "caption": "Time per tree relative to pooled xgboost.train (hist) "
         "timed in the same job (median, min and max over runs; benchmark, varies between "
         "runs)."},
    ]  # fmt: skip
    write_section(
        out.section,
        Section(
            id="boosting",
            title="Federated gradient tree boosting (seed 003 ch. 10)",
            order=65,
            text=R.section_text(cfg, metrics),
            figures=figures,
            tables=tables,
            headline=headlines.boosting(tables, figures),
        ),
    )


run(main, snakemake)
