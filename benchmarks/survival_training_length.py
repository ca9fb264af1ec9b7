"""Survival (D6.2 ch. 8, issue 28 item 7): blind-test C-index of every strategy and scenario at
fixed training lengths (federated epochs × internal epochs, no grid search), on the cohort the
survival stage builds — what the gap between this project's lower bounds / non-IID rows and
D6.2's comes from.

    python benchmarks/survival_training_length.py --mirror /work/shared/data \\
        --lengths 6x3 20x5 50x10 --reps 3 --out docs/survival_training_length

    python benchmarks/survival_training_length.py --mirror /work/shared/data \\
        --lengths grid --reps 1 --out docs/survival_thesis_grid

``--lengths grid`` runs the config's own grid (thesis.yaml: 16 points, chosen by the stage's
leave-one-centre-out CV) — one workflow unit per row, the chosen point in ``best``.

Each (repetition, scenario, strategy, length) is one call of the stage's own unit
(:func:`fedclust.survival.experiment.run_job`) with a one-point grid (so no CV), the same seeds
as the workflow; the config is config/thesis.yaml's survival section (schema defaults filled)
with the grid replaced. Appends to <out>/points.tsv (resumable: finished rows are skipped).
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import pandas as pd

from fedclust.config import SCHEMA, fill_defaults, load_config_file, load_yaml
from fedclust.survival.cohort import load_ipssm_survival, simulate_cohort
from fedclust.survival.experiment import run_job

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mirror", default=None, help="data mirror with ipssm/ (else simulated)")
    ap.add_argument("--config", default=str(REPO / "config" / "thesis.yaml"))
    ap.add_argument("--lengths", nargs="+", default=["6x3", "20x5", "50x10"])
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--batches", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rep-start", type=int, default=0)
    ap.add_argument("--endpoint", default="OS")
    ap.add_argument("--scenarios", nargs="+", default=None)
    ap.add_argument("--strategies", nargs="+", default=None)
    ap.add_argument("--out", default=str(REPO / "docs" / "survival_training_length"))
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    import torch

    torch.set_num_threads(1)
    config = fill_defaults(load_config_file(args.config), load_yaml(SCHEMA))
    cfg, seed = config["survival"], int(config["seed"])
    if args.mirror:
        d = Path(args.mirror) / "ipssm"
        x, obs = load_ipssm_survival(str(d / "df_clinical.tsv"), str(d / "df_mut.tsv"),
                                     str(d / "df_cna.tsv"), list(cfg["clinical"]),
                                     int(cfg["min_carriers"]))  # fmt: skip
        source = "ipssm"
    else:
        x, obs = simulate_cohort(seed, int(cfg["simulate_n"]), int(cfg["min_carriers"]))
        source = "simulated"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "points.tsv"
    done = pd.read_csv(path, sep="\t") if path.exists() else pd.DataFrame()
    key = ["rep", "scenario", "strategy", "fe", "ie"]
    seen = set(map(tuple, done[key].astype(str).to_numpy())) if len(done) else set()
    scenarios = args.scenarios or list(cfg["scenarios"])
    strategies = args.strategies or list(cfg["strategies"])
    for rep in range(args.rep_start, args.rep_start + args.reps):
        for length in args.lengths:
            if length == "grid":  # the config's own grid search
                fe = ie = "grid"
                grid = cfg["grid"]
            else:
                fe, ie = (int(v) for v in length.split("x"))
                grid = {"federated_epochs": [fe], "internal_epochs": [ie],
                        "batches": [args.batches], "lr": [args.lr]}  # fmt: skip
            for st in strategies:
                for sc in ["iid_balanced"] if st.startswith("centralized") else scenarios:
                    if (str(rep), sc, st, str(fe), str(ie)) in seen:
                        continue
                    t0 = time.process_time()
                    res, _, _ = run_job(x, obs, args.endpoint, sc, st, rep,
                                        {**cfg, "grid": grid}, seed)  # fmt: skip
                    row = pd.DataFrame([{
                        "source": source, "endpoint": args.endpoint, "rep": rep, "scenario": sc,
                        "strategy": st, "fe": fe, "ie": ie,
                        "batches": args.batches if fe != "grid" else "grid",
                        "lr": args.lr if fe != "grid" else "grid",
                        "test_c_index": res["test_c_index"],
                        "cpu_s": round(time.process_time() - t0, 2),
                    }])  # fmt: skip
                    if fe == "grid":  # the point the CV chose (isolated: one per centre)
                        b = res["best"]
                        row["best"] = b if isinstance(b, str) else ";".join(b.values())
                    row.to_csv(path, sep="\t", mode="a", header=not path.exists(), index=False)
                    print(row.to_string(index=False, header=False), flush=True)


if __name__ == "__main__":
    main()
