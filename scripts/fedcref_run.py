"""Rule `fedcref_run`: one (experiment, setting, repetition), every variant on one system; or
(``fedcref.fanout: repetition``) every (experiment, setting) of one repetition in one process."""

import numpy as np
import pandas as pd
import torch
from _common import run

from fedclust.fedcref.experiments import calibrated_theta, resolve_theta, run_units
from fedclust.fedcref.workflow import run_inputs
from fedclust.io import write_result_and_benchmark, write_table
from fedclust.transports import from_config


def main() -> None:
    torch.set_num_threads(max(1, int(snakemake.threads)))
    w, cfg, out = snakemake.wildcards, snakemake.params.cfg, snakemake.output
    settings, rep = snakemake.params.settings, int(w.rep)
    pairs = snakemake.params.units
    names = ("history", "summary", "ledger", "history_timing", "summary_timing")
    if pairs is None:  # one unit per job
        pairs = [(w.exp, w.setting)]
        paths = [tuple(out[n] for n in names)]
    else:
        pairs = [tuple(p) for p in pairs]
        paths = list(zip(*(out[n] for n in names), strict=True))
    data: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    units = []
    for e, s in pairs:
        files = run_inputs(settings, snakemake.params.calibrated, e, s)
        if files["data"] not in data:
            with np.load(files["data"]) as z:
                data[files["data"]] = (z["x"], z["y"])
        x, y = data[files["data"]]
        st = settings[e][s]
        theta = resolve_theta(cfg, files.get("calibration"), st)
        side = None
        if "fedcref_calibrated" in st.get("variants", cfg["variants"]):
            side = calibrated_theta(cfg, files.get("calibration"), st)
        units.append((e, s, st, x, y, theta, side))
    results = run_units(cfg, units, int(snakemake.params.seed), rep, from_config(snakemake.config))
    scalar = (str, int, float)
    for (e, s), (hist, summ, ledger), (p_hist, p_summ, p_ledger, b_hist, b_summ) in zip(
        pairs, results, paths, strict=True
    ):
        meta = {"exp": e, "setting": s, "repetition": rep, **settings[e][s]}
        meta = {k: v for k, v in meta.items() if isinstance(v, scalar) and not isinstance(v, bool)}
        # timing columns (seconds, cpu_seconds, ...) only in the benchmark copies
        write_result_and_benchmark(p_hist, b_hist, hist.assign(**meta))
        write_result_and_benchmark(p_summ, b_summ, pd.DataFrame(summ).assign(**meta))
        write_table(p_ledger, ledger, index=False)


run(main, snakemake)
