"""One unit of the boosting grid: (dataset, split, scheme, repetition) → metrics, timing and
message tables (issue 26; seed 003 ch. 10).

Schemes (``boosting.schemes``; :func:`scheme_ids` expands ``vote`` over S and the variants):

- ``pooled``: ``xgboost.train`` (hist) on every training row binned to the pooled holder's grid
  (the same steps as the federated grid, floor 1) — the reference of every gap;
- ``pooled_raw``: ``xgboost.train`` on the raw pooled features (XGBoost's own sketch, max_bin);
- ``histogram`` / ``histogram_nofloor``: the histogram protocol at the centres' floor
  (``boosting.min_samples``) / with every centre's floor at 1 (then it equals ``pooled``);
- ``vote_<zero|union>_s<S>``: D6.2's top-S vote (S = ``all``: every admissible split);
- ``isolated``: each centre's own ``xgboost.train`` on its raw rows (one row per centre);
- ``bagging`` / ``cyclic``: Flower's tree-bagging and cyclic XGBoost.

Every model is scored on the pooled held-out rows (AUC, log-loss): an evaluation, not part of
a protocol. Federated schemes run through :func:`fedclust.federation.federate` with the
transport the rule script passes in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ConfigError
from ..federation import INPROCESS, Ledger, Transport, federate
from ..federation.disclosure import configured_policy
from . import data as D
from . import grid as GR
from . import pooled as PL
from . import server as S
from . import tree as T
from . import workflow as W
from .centre import Centre, without_floor
from .protocols import protocols

FAMILIES = ("pooled", "pooled_raw", "histogram", "histogram_nofloor", "vote", "isolated",
            "bagging", "cyclic")  # fmt: skip
VARIANTS = ("zero", "union")
POOLED_TIMING_REPEAT = 3  # pooled xgboost fits timed per unit (the fastest counts)
_VOTE = re.compile(r"^vote_(zero|union)_s(all|[1-9][0-9]*)$")

ID_COLUMNS = ["dataset", "split", "regime", "scheme", "family", "variant", "S", "rep", "centre"]
METRIC_COLUMNS = [
    *ID_COLUMNS, "centres", "n_train", "n_test", "trees", "rounds", "floor", "auc", "logloss",
    "pooled_auc", "pooled_logloss", "auc_gap", "logloss_gap", "same_grid", "same_trees",
    "max_leaf_diff", "max_margin_diff", "max_prob_diff", "leaves_per_tree",
    "floats_per_centre_per_tree",
    "down_floats_per_centre_per_tree", "grid_floats_per_centre", "messages", "abstentions",
    "source",
]  # fmt: skip
TIMING_COLUMNS = [*ID_COLUMNS[:-1], "trees", "seconds", "grid_seconds", "pooled_seconds",
                  "seconds_per_tree", "pooled_seconds_per_tree", "ratio"]  # fmt: skip


@dataclass(frozen=True)
class Scheme:
    id: str
    family: str
    variant: str = ""
    top: int = 0  # S; 0 = all

    @property
    def S(self) -> str:
        return "" if self.family != "vote" else ("all" if self.top == 0 else str(self.top))


def parse_scheme(sid: str) -> Scheme:
    if m := _VOTE.match(sid):
        return Scheme(sid, "vote", m.group(1), 0 if m.group(2) == "all" else int(m.group(2)))
    if sid in FAMILIES and sid != "vote":
        return Scheme(sid, sid)
    raise ConfigError(f"unknown boosting scheme {sid!r}", where="boosting.schemes",
                      fix=f"one of {FAMILIES} (vote expands over boosting.vote)")  # fmt: skip


def scheme_ids(cfg: dict[str, Any]) -> list[str]:
    """The scheme ids of a config (``vote`` expanded over S and the variants), checked."""
    out = W.scheme_ids(cfg)
    for s in out:
        parse_scheme(s)
    return out


def params_of(cfg: dict[str, Any]) -> T.Params:
    p = cfg.get("params", {})
    return T.Params(
        max_depth=int(p.get("max_depth", 3)), eta=float(p.get("eta", 0.3)),
        reg_lambda=float(p.get("lambda", 1.0)), gamma=float(p.get("gamma", 0.0)),
        min_child_weight=float(p.get("min_child_weight", 1.0)),
        base_score=float(p.get("base_score", 0.5)),
    )  # fmt: skip


def grid_cfg(cfg: dict[str, Any]) -> dict[str, Any]:
    g = cfg.get("grid", {})
    return {"method": str(g.get("method", "quantile")), "max_bin": int(g.get("max_bin", 32)),
            "sketch_bins": int(g.get("sketch_bins", 64)),
            "range_sd": float(g.get("range_sd", 4.0))}  # fmt: skip


# -------------------------------------------------------------------------------- metrics
def scores(y: np.ndarray, margin: np.ndarray) -> tuple[float, float]:
    """(AUC, log-loss) of margins on labels (NaN AUC with one class)."""
    from sklearn.metrics import log_loss, roc_auc_score

    p = 1.0 / (1.0 + np.exp(-np.asarray(margin, np.float64)))
    auc = float(roc_auc_score(y, p)) if len(np.unique(y)) == 2 else float("nan")
    return auc, float(log_loss(y, np.clip(p, 1e-15, 1 - 1e-15), labels=[0, 1]))


def _prob(m: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.asarray(m, np.float64)))


@dataclass
class UnitResult:
    metrics: pd.DataFrame
    timing: pd.DataFrame
    messages: pd.DataFrame


def message_table(ledger: Ledger, ids: dict[str, Any]) -> pd.DataFrame:
    """Messages and numbers per (kind, direction) of a federated run."""
    cols = [*ID_COLUMNS[:-1], "kind", "direction", "protocol", "messages", "floats",
            "abstentions"]  # fmt: skip
    t = ledger.table()
    if t.empty:
        return pd.DataFrame(columns=cols)
    t = t.assign(direction=np.where(t["sender"] == "server", "server->centre",
                                    "centre->server"))  # fmt: skip
    t.loc[t["kind"] == "abstain", "direction"] = "centre->server"
    rows = []
    for (kind, direction), g in t.groupby(["kind", "direction"], sort=False):
        ab = g["kind"] == "abstain"
        rows.append({**ids, "kind": kind, "direction": direction,
                     "protocol": ",".join(sorted(set(g["protocol"]))),
                     "messages": int((~ab).sum()), "floats": int(g["floats"].sum()),
                     "abstentions": int(ab.sum())})  # fmt: skip
    return pd.DataFrame(rows, columns=cols)


def _leaves(trees: list[T.Tree]) -> float:
    return float(np.mean([len(t.leaves()) for t in trees])) if trees else 0.0


def _traffic(ledger: Ledger, n_centres: int, rounds: int) -> tuple[float, float, float]:
    t = ledger.messages()
    up = t["sender"] != "server"
    tree = t["round"] >= 1
    per = max(n_centres, 1) * max(rounds, 1)
    return (float(t.loc[up & tree, "floats"].sum()) / per,
            float(t.loc[~up & tree, "floats"].sum()) / per,
            float(t.loc[up & ~tree, "floats"].sum()) / max(n_centres, 1))  # fmt: skip


# ----------------------------------------------------------------------------------- unit
def run_unit(
    ds: D.Dataset, split: str, spec: dict, scheme_id: str, rep: int, cfg: dict[str, Any],
    seed: int, transport: Transport = INPROCESS, data_splits: dict | None = None,
) -> UnitResult:  # fmt: skip
    """Train the scheme on the split's training rows, score it on the held-out rows."""
    sch = parse_scheme(scheme_id)
    params, gcfg, n_trees = params_of(cfg), grid_cfg(cfg), int(cfg.get("trees", 10))
    nofloor = sch.family == "histogram_nofloor"
    floor = 1 if nofloor else int(cfg.get("min_samples", 3))
    centre = D.centres(ds, split, spec, seed, rep)
    test = D.test_rows(ds.y, centre, float(cfg.get("test_fraction", 0.25)), seed, ds.name,
                       split, rep)  # fmt: skip
    Xtr, ytr, ctr = ds.X[~test], ds.y[~test], centre[~test]
    Xte, yte = ds.X[test], ds.y[test]
    names = [c for c in sorted(set(ctr.tolist())) if (ctr == c).any()]
    ids = {"dataset": ds.name, "split": split, "regime": D.regime(spec, data_splits),
           "scheme": sch.id, "family": sch.family, "variant": sch.variant, "S": sch.S,
           "rep": int(rep)}  # fmt: skip

    # the pooled reference: its own grid (floor 1), xgboost.train on the codes
    pgrid = GR.pooled_grid(Xtr, **gcfg)
    ptr, pte = GR.encode(Xtr, pgrid), GR.encode(Xte, pgrid)
    ref, pooled_sec = PL.xgboost_fit(ptr, ytr, params, n_trees, gcfg["max_bin"])
    for _ in range(POOLED_TIMING_REPEAT - 1):  # the fastest of a few fits: a stable baseline
        pooled_sec = min(pooled_sec, PL.xgboost_fit(ptr, ytr, params, n_trees,
                                                    gcfg["max_bin"])[1])  # fmt: skip
    ref_trees = PL.xgboost_trees(ref)
    ref_margin = PL.xgboost_margin(ref, pte)
    p_auc, p_ll = scores(yte, ref_margin)

    base = {**ids, "centres": len(names), "n_train": int(len(ytr)), "n_test": int(len(yte)),
            "pooled_auc": p_auc, "pooled_logloss": p_ll, "source": ds.source}  # fmt: skip
    rows, messages = [], message_table(Ledger(), ids)
    seconds, grid_seconds, rounds = pooled_sec, 0.0, n_trees

    def row(margin, centre_name="all", **extra):
        auc, ll = scores(yte, margin)
        return {**base, "centre": centre_name, "auc": auc, "logloss": ll, "auc_gap": auc - p_auc,
                "logloss_gap": ll - p_ll,
                "max_margin_diff": float(np.max(np.abs(np.asarray(margin, np.float64)
                                                       - ref_margin))),
                "max_prob_diff": float(np.max(np.abs(_prob(margin) - _prob(ref_margin)))),
                **extra}  # fmt: skip

    if sch.family == "pooled":
        a = PL.agreement(ref_trees, ref_trees, pte, params)
        rows.append(row(ref_margin, trees=n_trees, rounds=n_trees, same_grid=True,
                        same_trees=a.same_trees, max_leaf_diff=0.0,
                        leaves_per_tree=_leaves(ref_trees)))  # fmt: skip
    elif sch.family == "pooled_raw":
        bst, seconds = PL.xgboost_fit(Xtr, ytr, params, n_trees, gcfg["max_bin"])
        rows.append(row(PL.xgboost_margin(bst, Xte), trees=n_trees, rounds=n_trees,
                        leaves_per_tree=PL.leaves_per_tree(bst)))  # fmt: skip
    elif sch.family == "isolated":
        seconds = 0.0
        for c in names:
            m = ctr == c
            bst, sec = PL.xgboost_fit(Xtr[m], ytr[m], params, n_trees, gcfg["max_bin"])
            seconds += sec
            rows.append(row(PL.xgboost_margin(bst, Xte), c, trees=n_trees, rounds=n_trees,
                            n_train=int(m.sum()),
                            leaves_per_tree=PL.leaves_per_tree(bst)))  # fmt: skip
        seconds /= max(len(names), 1)
    else:
        # each centre's floor: max(min_samples, its own disclosure nfilter_subset); the
        # exactness check runs centres configured without one
        own = (lambda c: without_floor(configured_policy(c))) if nofloor else (lambda c: None)
        cs = [Centre(c, Xtr[ctr == c], ytr[ctr == c], params, floor, own(c)) for c in names]
        P = protocols(floor)  # the server's ledger: min_samples (each centre checks its own)
        kw = {"grid_cfg": gcfg}
        if sch.family in ("histogram", "histogram_nofloor", "vote"):
            fam = "vote" if sch.family == "vote" else "histogram"
            fn = partial(S.boost, P=P, params=params, n_trees=n_trees, scheme=fam, top=sch.top,
                         variant=sch.variant or "zero", **kw)  # fmt: skip
        else:
            fn = partial(getattr(S, sch.family), P=P, params=params, n_trees=n_trees,
                         local_rounds=int(cfg.get("local_rounds", 1)), **kw)  # fmt: skip
        ledger = Ledger()
        model = federate(cs, fn, ledger=ledger, transport=transport)
        seconds, grid_seconds, rounds = model.seconds, model.grid_seconds, model.rounds
        margin = model.margin(GR.encode(Xte, model.grid))
        up, down, grid_up = _traffic(ledger, len(cs), rounds)
        same_grid = len(model.grid.cuts) == len(pgrid.cuts) and all(
            np.array_equal(a, b) for a, b in zip(model.grid.cuts, pgrid.cuts, strict=True)
        )
        extra: dict[str, Any] = {"same_grid": same_grid, "leaves_per_tree": _leaves(model.trees),
                                 "floor": max(c.floor for c in cs)}  # fmt: skip
        if same_grid and sch.family != "bagging":
            a = PL.agreement(model.trees, ref_trees, pte, params)
            extra.update(same_trees=a.same_trees, max_leaf_diff=a.max_leaf_diff)
        rows.append(row(margin, trees=len(model.trees), rounds=rounds, messages=ledger.n_messages,
                        abstentions=ledger.n_abstentions, floats_per_centre_per_tree=up,
                        down_floats_per_centre_per_tree=down, grid_floats_per_centre=grid_up,
                        **extra))  # fmt: skip
        messages = message_table(ledger, ids)
    metrics = pd.DataFrame(rows).reindex(columns=METRIC_COLUMNS)
    timing = pd.DataFrame([{
        **{k: v for k, v in ids.items()}, "trees": n_trees, "seconds": seconds,
        "grid_seconds": grid_seconds, "pooled_seconds": pooled_sec,
        "seconds_per_tree": seconds / max(rounds, 1),
        "pooled_seconds_per_tree": pooled_sec / n_trees,
        "ratio": (seconds / max(rounds, 1)) / max(pooled_sec / n_trees, 1e-12),
    }], columns=TIMING_COLUMNS)  # fmt: skip
    return UnitResult(metrics, timing, messages)


def load(dataset: str, cfg: dict[str, Any], inputs: dict[str, str], heart: dict | None = None,
         mds_source: str = "") -> D.Dataset:  # fmt: skip
    """The dataset a job's units share, from the inputs :func:`workflow.dataset_inputs` names."""
    dcfg = (cfg.get("datasets") or {}).get(dataset) or {}
    if dataset == "heart":
        return D.load_heart(inputs["heart_features"], inputs["heart_obs"], heart)
    if dataset == "breast_cancer":
        return D.load_breast_cancer()
    if dataset == "mds":
        pre = "mds_split_"
        splits = {k[len(pre) :]: v for k, v in inputs.items() if k.startswith(pre)}
        return D.load_mds(inputs["mds_features"], inputs["mds_obs"],
                          dcfg.get("outcome", "OS_STATUS"), dcfg.get("positive", 1),
                          mds_source or "MDS cohort of the data stage", splits)  # fmt: skip
    raise ConfigError(f"unknown boosting dataset {dataset!r}", where="boosting.datasets",
                      fix=f"one of {D.DATASETS}")  # fmt: skip


def run_units(
    cfg: dict[str, Any], units: list, seed: int, inputs: dict[str, str], *,
    heart: dict | None = None, mds_source: str = "", data_splits: dict | None = None,
    transport: Transport = INPROCESS,
) -> UnitResult:  # fmt: skip
    """Run the units of one job in order (each dataset read once); their tables concatenated."""
    data: dict[str, D.Dataset] = {}
    parts = []
    for ds, split, sch, rep in units:
        if ds not in data:
            data[ds] = load(ds, cfg, inputs, heart, mds_source)
        spec = cfg["datasets"][ds]["splits"][split]
        parts.append(run_unit(data[ds], split, spec, sch, int(rep), cfg, seed, transport,
                              data_splits))  # fmt: skip
    cat = lambda k: pd.concat([getattr(p, k) for p in parts], ignore_index=True)  # noqa: E731
    return UnitResult(cat("metrics"), cat("timing"), cat("messages"))
