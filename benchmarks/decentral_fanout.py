"""Lockstep group vs one job per approach (issue 14): wall time and identical numbers.

    python benchmarks/decentral_fanout.py --data results/data/heart --split hospitals \
        --mode as_published --rounds 1 --epochs 4

Trains the mode's approaches once as the lockstep groups of ``fanout: mode`` (``run_group`` of
all) and once one approach at a time (``fanout: approach``: ``run_group`` of one), in ONE process
so both see the same machine load, asserts that every metric and divergence is bit-identical,
and prints the wall times, the optimizer steps per second and the extrapolation of one
approach's job to the thesis' 100 rounds x 38 epochs. Data: ``DIR/features.parquet`` +
``DIR/obs.tsv`` (rule data_heart).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

APPROACHES = ["FL", "FL_SMA", "RAR", "GL_conditional", "GL_random", "customized"]
COLUMN = {"hospitals": "hospital", "sources": "source"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=str(ROOT / "results/data/heart"))
    ap.add_argument("--split", default="hospitals", choices=sorted(COLUMN))
    ap.add_argument("--mode", default="as_published")
    ap.add_argument("--approaches", nargs="+", default=APPROACHES)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--seed", type=int, default=20251123)
    a = ap.parse_args()
    import pandas as pd
    import torch

    torch.set_num_threads(1)
    from fedclust.decentral.clients import make_client_data
    from fedclust.decentral.simulate import run_group
    from fedclust.io import read_table

    f = read_table(Path(a.data) / "features.parquet")
    obs = read_table(Path(a.data) / "obs.tsv").loc[f.index]
    data = make_client_data(f, obs["HeartDisease"].to_numpy(), obs[COLUMN[a.split]].to_numpy())
    runs = [(x, a.mode) for x in a.approaches]
    kw = dict(rounds=a.rounds, epochs=a.epochs, batch_size=14, seed=a.seed)
    t0 = time.perf_counter()
    group = run_group(data, runs, **kw)
    t_group = time.perf_counter() - t0
    alone, t_alone = {}, {}
    for r in runs:
        t0 = time.perf_counter()
        alone[r] = run_group(data, [r], **kw)[r]
        t_alone[r[0]] = time.perf_counter() - t0
    for r in runs:
        pd.testing.assert_frame_equal(group[r].metrics, alone[r].metrics, check_exact=True)
        pd.testing.assert_frame_equal(group[r].divergence, alone[r].divergence, check_exact=True)
    per_round = {x: alone[(x, a.mode)].steps / a.rounds for x in a.approaches}
    out = {
        "split": a.split, "mode": a.mode, "rounds": a.rounds, "epochs": a.epochs,
        "identical": True,
        "lockstep_wall_s": round(t_group, 2),
        "one_job_per_approach_wall_s": {k: round(v, 2) for k, v in t_alone.items()},
        "sum_of_jobs_s": round(sum(t_alone.values()), 2),
        "longest_job_s": round(max(t_alone.values()), 2),
        "steps_per_s_alone": {x: round(alone[(x, a.mode)].steps / t_alone[x], 1)
                              for x in a.approaches},
        # one approach's job at 100 rounds x 38 epochs: steps scale with rounds x epochs
        "thesis_job_min": {x: round(t_alone[x] * (100 * 38) / (a.rounds * a.epochs) / 60, 1)
                           for x in a.approaches},
        "steps_per_round": per_round,
    }  # fmt: skip
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
