"""The pooled reference: ``xgboost.train`` (hist) on the pooled binned training data, and the
comparison of its trees with ours (``get_dump(dump_format="json")``).

Fed integer bin codes 0..B_j−1 with ``max_bin`` ≥ B_j, XGBoost's quantile sketch keeps every
distinct code as its own bin (cut values = the codes 1..B_j−1), so its split candidates are
exactly the grid's (every bin of the grid holds training samples, ``grid.py``): a dumped
``split_condition`` k is the cut "code < k".
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import numpy as np

from .tree import Params, Tree, predict_margin


def xgboost_fit(
    codes: np.ndarray, y: np.ndarray, params: Params, n_trees: int, max_bin: int
) -> tuple[object, float]:
    """(booster, seconds) of ``xgboost.train`` on the codes (as float32 features)."""
    import xgboost as xgb

    d = xgb.DMatrix(np.asarray(codes, np.float32), label=np.asarray(y, np.float32), nthread=1)
    t0 = time.perf_counter()
    bst = xgb.train(params.xgboost(max_bin), d, num_boost_round=int(n_trees))
    return bst, time.perf_counter() - t0


def xgboost_margin(booster: object, codes: np.ndarray) -> np.ndarray:
    import xgboost as xgb

    d = xgb.DMatrix(np.asarray(codes, np.float32), nthread=1)
    return booster.predict(d, output_margin=True)


def _node(t: Tree, node: dict) -> None:
    nid = int(node["nodeid"])
    while t.n_nodes <= nid:
        t.add(0)
    if "leaf" in node:
        t.value[nid] = float(np.float32(node["leaf"]))
        return
    t.feature[nid] = int(str(node["split"]).lstrip("f"))
    cond = float(node["split_condition"])
    if cond != round(cond):
        raise ValueError(f"split condition {cond} is not a bin code")
    t.cut[nid] = int(round(cond))
    t.left[nid], t.right[nid] = int(node["yes"]), int(node["no"])
    for child in node["children"]:
        _node(t, child)


def xgboost_trees(booster: object) -> list[Tree]:
    """The booster's trees as :class:`Tree` (node ids as XGBoost numbers them)."""
    out = []
    for text in booster.get_dump(dump_format="json"):
        t = Tree()
        _node(t, json.loads(text))
        out.append(t)
    return out


def leaves_per_tree(booster: object) -> float:
    """Mean number of leaves of a booster's trees."""
    dump = booster.get_dump(dump_format="json")
    return float(np.mean([text.count('"leaf"') for text in dump])) if dump else 0.0


@dataclass(frozen=True)
class Agreement:
    """How far two ensembles are apart: trees with the same structure (features, cuts, children),
    the largest |leaf difference| among those, the largest |margin difference|."""

    same_trees: int
    trees: int
    max_leaf_diff: float
    max_margin_diff: float

    @property
    def identical(self) -> bool:
        return self.same_trees == self.trees


def same_structure(a: Tree, b: Tree) -> bool:
    return (a.feature, a.cut, a.left, a.right) == (b.feature, b.cut, b.left, b.right)


def agreement(ours: list[Tree], ref: list[Tree], codes: np.ndarray, params: Params) -> Agreement:
    same = [same_structure(a, b) for a, b in zip(ours, ref, strict=False)]
    same += [False] * abs(len(ours) - len(ref))
    leaf = [
        float(np.max(np.abs(np.subtract(a.value, b.value)))) if s else np.inf
        for a, b, s in zip(ours, ref, same, strict=False)
    ]
    leaf_same = [v for v in leaf if np.isfinite(v)]
    m = predict_margin(ours, codes, params.base_margin)
    r = predict_margin(ref, codes, params.base_margin)
    return Agreement(
        same_trees=int(sum(same)),
        trees=max(len(ours), len(ref)),
        max_leaf_diff=max(leaf_same) if leaf_same else float("nan"),
        max_margin_diff=float(np.max(np.abs(m.astype(np.float64) - r))) if len(codes) else 0.0,
    )
