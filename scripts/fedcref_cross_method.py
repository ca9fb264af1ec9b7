"""Rule `fedcref_cross_method`: centralized references on the same client system (Table 2)."""

import numpy as np
import pandas as pd
import torch
from _common import run

from fedclust.fedcref.experiments import cross_method
from fedclust.io import write_table
from fedclust.seeds import derive_seed


def main() -> None:
    torch.set_num_threads(max(1, int(snakemake.threads)))
    w, cfg = snakemake.wildcards, snakemake.params.cfg
    setting = snakemake.params.settings[w.exp][w.setting]
    with np.load(snakemake.input.data) as z:
        x, y = z["x"], z["y"]
    seed = derive_seed(int(snakemake.params.seed), "fedcref", w.exp, w.setting, int(w.rep))
    rows = cross_method(cfg, setting, x, y, seed, snakemake.params.dec)
    for r in rows:
        for key in ("silhouette", "acc_by_k", "client_acc_by_k"):
            if key in r:
                r[key] = str(r[key])
    table = pd.DataFrame(rows).assign(setting=w.setting, repetition=int(w.rep))
    write_table(snakemake.output.table, table, index=False)


run(main, snakemake)
