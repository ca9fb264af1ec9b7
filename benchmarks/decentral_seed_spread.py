"""Run-to-run spread of the seed 004 curves: one approach, several seeds, rounds 1..R, next to the
thesis' single run (Tables 4.1–4.3). The thesis made one run per approach; this says how far a
single run can land from another (spec §6.3 gives ±0.1 from the author's older pickles).

    python benchmarks/decentral_seed_spread.py --approach FL --mode as_described --rounds 10 \
        --seeds 0 1 2 3 4

Data: ``results/data/heart/features.parquet`` + ``obs.tsv`` (rule data_heart) or ``--data DIR``.
Thesis scale by default (38 local epochs × batch 14). Prints one JSON line per round (min / median /
max over seeds of the n_train-weighted loss with penalty, its BCE and penalty parts, accuracy,
AUC; ``--per-seed``: every seed's value), the thesis value and whether it lies in our seed range.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

METRICS = {
    "loss_total": "TABLE_4_1_LOSS",
    "loss_bce": None,
    "penalty": None,
    "accuracy": "TABLE_4_2_ACCURACY",
    "auc": "TABLE_4_3_AUC",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--approach", default="FL")
    ap.add_argument("--mode", default="as_described")
    ap.add_argument("--split", default="hospitals", choices=["hospitals", "sources"])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--epochs", type=int, default=38)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data", default=str(ROOT / "results/data/heart"))
    ap.add_argument("--per-seed", action="store_true", help="print every seed's value too")
    a = ap.parse_args()
    import torch

    torch.set_num_threads(a.threads)
    from fedclust.decentral import published
    from fedclust.decentral.clients import make_client_data
    from fedclust.decentral.simulate import run_approach, weighted_summary
    from fedclust.io import read_table

    f = read_table(Path(a.data) / "features.parquet")
    obs = read_table(Path(a.data) / "obs.tsv").loc[f.index]
    col = {"hospitals": "hospital", "sources": "source"}[a.split]
    data = make_client_data(f, obs["HeartDisease"].to_numpy(), obs[col].to_numpy())
    curves = []
    t0 = time.perf_counter()
    for s in a.seeds:
        res = run_approach(data, a.approach, a.mode, a.rounds, a.epochs, 14, seed=s)
        c = weighted_summary(res.metrics).set_index("round")
        c["penalty"] = c["loss_total"] - c["loss_bce"]
        curves.append(c)
        print(json.dumps({"seed": s, **{m: [round(float(x), 3) for x in c[m]] for m in METRICS},
                          "wall_s": round(res.wall_s, 1)}), flush=True)  # fmt: skip
    col_i = published.ORDER.index(a.approach) if a.approach in published.ORDER else None
    for r in range(1, a.rounds + 1):
        row: dict = {"round": r}
        for m, table in METRICS.items():
            v = np.array([c.loc[r, m] for c in curves])
            row[m] = [round(float(x), 3) for x in (v.min(), np.median(v), v.max())]
            if a.per_seed:
                row[f"{m}_seeds"] = [round(float(x), 3) for x in v]
            if table is None:
                continue
            thesis = getattr(published, table).get(r) if col_i is not None else None
            th = thesis[col_i] if thesis else None
            row[f"{m}_thesis"] = th
            if th is not None:  # within our seed range, at the table's 2 decimals
                row[f"{m}_thesis_in_range"] = bool(round(v.min(), 2) <= th <= round(v.max(), 2))
        print(json.dumps(row))
    print(json.dumps({"approach": a.approach, "mode": a.mode, "split": a.split,
                      "seeds": a.seeds, "wall_s": round(time.perf_counter() - t0, 1)}))  # fmt: skip


if __name__ == "__main__":
    main()
