"""Rule `fedcref_run`: one (experiment, setting, repetition), every variant on one system."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from _common import run  # noqa: E402

from fedclust.fedcref.experiments import resolve_theta, run_setting  # noqa: E402
from fedclust.io import write_table  # noqa: E402
from fedclust.seeds import derive_seed  # noqa: E402


def main() -> None:
    torch.set_num_threads(1)
    w, cfg = snakemake.wildcards, snakemake.params.cfg
    setting = snakemake.params.settings[w.exp][w.setting]
    with np.load(snakemake.input.data) as z:
        x, y = z["x"], z["y"]
    theta = resolve_theta(cfg, snakemake.input.get("calibration"))
    seed = derive_seed(int(snakemake.params.seed), "fedcref", w.exp, w.setting, int(w.rep))
    hist, summ, ledger = run_setting(cfg, setting, x, y, seed, theta)
    meta = {"exp": w.exp, "setting": w.setting, "repetition": int(w.rep), **setting}
    scalar = (str, int, float)
    meta = {k: v for k, v in meta.items() if isinstance(v, scalar) and not isinstance(v, bool)}
    write_table(snakemake.output.history, hist.assign(**meta), index=False)
    write_table(snakemake.output.summary, pd.DataFrame(summ).assign(**meta), index=False)
    write_table(snakemake.output.ledger, ledger, index=False)


run(main, snakemake)
