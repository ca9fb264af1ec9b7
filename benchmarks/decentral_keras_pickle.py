"""Our evaluation against Keras' own numbers: the author's saved weights, re-evaluated here.

The thesis' repository (``mma735/TFM-DS``, spec §7) keeps pickles of earlier runs of the same
notebooks (v4, spec §6.3). Their ``save_weights`` entries are all one list object that the
notebook kept appending (``save_weights.append(weights_clients)`` without a copy), so they hold
the **round-100** weights of every client; ``loss_test_round[k][99]`` is the loss Keras'
``evaluate`` reported for exactly those weights on client k's test set. This loads each client's
32 arrays into :class:`~fedclust.decentral.model.HeartNet`, evaluates on our client k test split
and prints Keras' number beside ours, with the penalty (L1 + L2 of the first kernel) and BCE split
and the share of first-kernel entries with |w| < 1e-3 (spec §3.3, issue 16). The pickle is the
author's data: pass its path, it is not part of this project. Loading a pickle runs code
from the file: use only a file you fetched from the author's repository yourself.

    python benchmarks/decentral_keras_pickle.py PATH/results_Test_customized_1_v4_noValidation.pkl

Data: ``results/data/heart/features.parquet`` + ``obs.tsv`` (rule data_heart) or ``--data DIR``.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("pickle", help="an author's results_Test_<approach>_v4*.pkl")
    ap.add_argument("--data", default=str(ROOT / "results/data/heart"))
    ap.add_argument("--round", type=int, default=100, help="the round the saved weights are from")
    a = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    from fedclust.decentral.clients import make_client_data
    from fedclust.decentral.training import Trainer
    from fedclust.io import read_table

    with open(a.pickle, "rb") as fh:  # the author's file, read on request only
        res = pickle.load(fh)
    f = read_table(Path(a.data) / "features.parquet")
    obs = read_table(Path(a.data) / "obs.tsv").loc[f.index]
    data = make_client_data(f, obs["HeartDisease"].to_numpy(), obs["hospital"].to_numpy())
    n = np.array([len(d.y_train) for d in data], float)
    tr = Trainer(data[0].X_train.shape[1], 1e-3, "fresh_each_fit", 0)
    rows = []
    for k, d in enumerate(data):
        w = [np.asarray(x, np.float32) for x in res["save_weights"][-1][k][0]]
        r = tr.evaluate(w, torch.from_numpy(d.X_test), torch.from_numpy(d.y_test))
        k1 = w[0]
        row = {
            "client": k + 1, "name": d.name,
            "keras_loss": round(float(res["loss_test_round"][k][a.round - 1]), 6),
            "our_loss": round(r.loss_total, 6),
            "our_penalty": round(r.loss_total - r.loss_bce, 6), "our_bce": round(r.loss_bce, 6),
            "keras_acc": round(float(res["acc_test_round"][k][a.round - 1]), 6),
            "our_acc": round(r.accuracy, 6),
            "keras_auc": round(float(res["AUC_test_round"][k][a.round - 1]), 6),
            "our_auc_keras": round(r.auc_keras, 6),
            "share_abs_below_1e-3": round(float((np.abs(k1) < 1e-3).mean()), 3),
        }  # fmt: skip
        rows.append(row)
        print(json.dumps(row))
    col = {c: np.array([r[c] for r in rows]) for c in rows[0] if c not in ("client", "name")}
    wm = {c: round(float(np.average(v, weights=n)), 4) for c, v in col.items()}
    print(json.dumps({"weighted": wm,
                      "max_abs_loss_diff": float(np.abs(col["keras_loss"] - col["our_loss"]).max()),
                      "round": a.round}))  # fmt: skip


if __name__ == "__main__":
    main()
