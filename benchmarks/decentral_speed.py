"""Speed of the seed 004 simulation: optimizer steps/s per approach, extrapolated to the thesis.

    python benchmarks/decentral_speed.py --rounds 1 --epochs 4            # measure on this machine
    python benchmarks/decentral_speed.py --rounds 50 --epochs 38 --parallel 10 --out DIR \
        --runs hospitals/as_published/RAR hospitals/as_described/RAR ...  # long runs, one core each

Data: ``results/data/heart/features.parquet`` + ``obs.tsv`` (rule data_heart), or ``--features`` a
TSV export. Each run writes ``DIR/<split>_<mode>_<approach>_{metrics,divergence}.tsv`` after every
round, so a run cut off by a time limit still leaves all finished rounds.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

THESIS_STEPS = {  # optimizer steps of one round at 38 epochs x batch 14 (spec §8.5)
    "full": 38 * sum(-(-n // 14) for n in (114, 219, 103, 113, 138)),
    "val15": 38 * sum(-(-n // 14) for n in (96, 186, 87, 96, 117)),
}
APPROACHES = ["FL", "FL_SMA", "RAR", "GL_conditional", "GL_random", "customized"]


def _load(features: str | None):
    import pandas as pd

    if features:
        t = pd.read_csv(features, sep="\t", index_col=0)
        return t.drop(columns=["HeartDisease", "hospital", "source"]), t
    from fedclust.io import read_table

    f = read_table(ROOT / "results/data/heart/features.parquet")
    return f, read_table(ROOT / "results/data/heart/obs.tsv").loc[f.index]


def _one(job: tuple) -> dict:
    run, rounds, epochs, features, out, seed = job
    import pandas as pd
    import torch

    torch.set_num_threads(1)
    from fedclust.decentral.clients import make_client_data
    from fedclust.decentral.simulate import run_approach

    split, mode, approach = run.split("/")
    feats, obs = _load(features)
    col = {"hospitals": "hospital", "sources": "source"}[split]
    data = make_client_data(feats, obs["HeartDisease"].to_numpy(), obs[col].to_numpy())
    stem = Path(out) / f"{split}_{mode}_{approach}" if out else None

    def dump(t: int, rows: list, drows: list) -> None:
        if stem is not None:
            pd.DataFrame(rows).to_csv(f"{stem}_metrics.tsv", sep="\t", index=False)
            pd.DataFrame(drows).to_csv(f"{stem}_divergence.tsv", sep="\t", index=False)
            Path(f"{stem}_progress.json").write_text(
                json.dumps({"round": t, "wall_s": time.perf_counter() - t0})
            )

    t0 = time.perf_counter()
    res = run_approach(data, approach, mode, rounds, epochs, 14, seed=seed, on_round=dump)
    return {"run": run, "steps": res.steps, "wall_s": res.wall_s,
            "steps_per_s": res.steps / res.wall_s}  # fmt: skip


def _group(split: str, runs: list[str], rounds: int, epochs: int, features, out, seed) -> list:
    """All runs of one split in lockstep groups (run_group); progress files every round."""
    import pandas as pd
    import torch

    torch.set_num_threads(1)
    from fedclust.decentral.clients import make_client_data
    from fedclust.decentral.simulate import run_group

    feats, obs = _load(features)
    col = {"hospitals": "hospital", "sources": "source"}[split]
    data = make_client_data(feats, obs["HeartDisease"].to_numpy(), obs[col].to_numpy())
    t0 = time.perf_counter()

    def dump(t: int, state: dict) -> None:
        for (a, m), r in state.items():
            stem = Path(out) / f"{split}_{m}_{a}"
            pd.DataFrame(r.rows).to_csv(f"{stem}_metrics.tsv", sep="\t", index=False)
            pd.DataFrame(r.drows).to_csv(f"{stem}_divergence.tsv", sep="\t", index=False)
        Path(out, f"{split}_progress.json").write_text(
            json.dumps({"round": t, "wall_s": time.perf_counter() - t0})
        )

    keys = [tuple(r.split("/")[2:0:-1]) for r in runs]  # (approach, mode)
    res = run_group(data, keys, rounds, epochs, 14, seed=seed, on_round=dump if out else None)
    return [
        {
            "run": f"{split}/{m}/{a}",
            "steps": r.steps,
            "wall_s": r.wall_s,
            "steps_per_s": r.steps / r.wall_s,
            "group_wall": True,
        }  # fmt: skip
        for (a, m), r in res.items()
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument(
        "--runs", nargs="*", default=[f"hospitals/as_published/{a}" for a in APPROACHES]
    )
    ap.add_argument("--parallel", type=int, default=1)
    ap.add_argument("--features", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--seed", type=int, default=20251123)
    ap.add_argument("--vectorise", action="store_true", help="lockstep groups (run_group)")
    a = ap.parse_args()
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)
    jobs = [(r, a.rounds, a.epochs, a.features, a.out, a.seed) for r in a.runs]
    t0 = time.perf_counter()
    if a.vectorise:
        res = []
        for split in sorted({r.split("/")[0] for r in a.runs}):
            mine = [r for r in a.runs if r.startswith(split + "/")]
            res += _group(split, mine, a.rounds, a.epochs, a.features, a.out, a.seed)
    elif a.parallel > 1:
        with mp.get_context("spawn").Pool(a.parallel) as pool:
            res = pool.map(_one, jobs)
    else:
        res = [_one(j) for j in jobs]
    for r in res:
        _, mode, approach = r["run"].split("/")
        val = mode == "as_published" and approach in ("GL_conditional", "GL_random", "customized")
        per_round = THESIS_STEPS["val15" if val else "full"]
        r["thesis_100x38_min"] = 100 * per_round / r["steps_per_s"] / 60
        print(json.dumps(r))
    print(json.dumps({"total_wall_s": time.perf_counter() - t0}))


if __name__ == "__main__":
    main()
