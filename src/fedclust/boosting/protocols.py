"""Every message of the boosting stage (seed 003 §9.2): what leaves a centre, field by field.

Centre → server messages carry their sample counts, and the ledger checks every count entry
against the centres' floor (``boosting.min_samples``): per-bin sums travel with their bin counts,
each vote candidate with the counts of both its sides, each split's sums with both children's
counts, each local tree with its leaves' counts. A centre that cannot meet the floor merges bins
or leaves the node out (``centre.py``), and abstains when nothing is left. Server → centre
messages carry the grid, requests and (partial) trees.

| protocol | centre → server | used by |
|---|---|---|
| ``boosting_moments`` | n, Σx, Σx² per feature | grid: range |
| ``boosting_sketch`` | merged lattice-cell counts | grid: quantile sketch |
| ``boosting_totals`` | n, Σg, Σh of the root | every tree (histogram, vote) |
| ``boosting_histogram`` | per node, feature and merged run of bins: n, Σg, Σh | histogram |
| ``boosting_vote`` | per node: N_p; top-S (feature, cut, L_split, n_left, n_right) | top-S vote |
| ``boosting_union`` | per node: N_p; L_split of the union's candidates (+ counts) | vote, union |
| ``boosting_split_sums`` | per node and side of the chosen split: n, Σg, Σh | histogram, vote |
| ``boosting_local_trees`` | local trees (structure, leaf values), leaf counts, n | bagging/cyclic |
"""

from __future__ import annotations

from dataclasses import dataclass

from ..federation import Protocol, declares

C, A, P, M = "count", "aggregate", "parameters", "metadata"
# Vectors of sums travel as one row (1 × k, ``centre.row``): the centre-side guard refuses an
# aggregate whose leading axis has one entry per sample.


@dataclass(frozen=True)
class Protocols:
    """The stage's protocols at one disclosure floor (the centres' ``min_samples``)."""

    moments: Protocol
    sketch: Protocol
    totals: Protocol
    histogram: Protocol
    vote: Protocol
    union: Protocol
    split_sums: Protocol
    local_trees: Protocol
    # server -> centre
    grid_request: Protocol
    grid: Protocol
    node_request: Protocol
    model: Protocol
    ack: Protocol


@declares()
def protocols(floor: int = 1) -> Protocols:
    """All protocols with ``min_samples = floor``."""
    m = int(floor)
    tree = {"feature": P, "cut": P, "left": P, "right": P, "value": P}
    return Protocols(
        moments=Protocol("boosting_moments", {"n": C, "sum": A, "sumsq": A}, min_samples=m),
        sketch=Protocol(
            "boosting_sketch", {"feature": M, "start": M, "end": M, "count": C}, min_samples=m
        ),
        totals=Protocol("boosting_totals", {"n": C, "g": A, "h": A}, min_samples=m),
        histogram=Protocol(
            "boosting_histogram",
            {
                "nodes": M,
                "bin_feature": M,
                "bin_start": M,
                "bin_end": M,
                "bin_n": C,
                "bin_g": A,
                "bin_h": A,
            },
            min_samples=m,
        ),  # fmt: skip
        vote=Protocol(
            "boosting_vote",
            {"nodes": M, "n": C, "feature": M, "cut": M, "gain": A, "n_left": C, "n_right": C},
            min_samples=m,
        ),
        union=Protocol(
            "boosting_union",
            {"nodes": M, "n": C, "index": M, "gain": A, "n_left": C, "n_right": C},
            min_samples=m,
        ),
        split_sums=Protocol(
            "boosting_split_sums",
            {"nodes": M, "side": M, "n": C, "g": A, "h": A},
            min_samples=m,
        ),  # fmt: skip
        local_trees=Protocol("boosting_local_trees", {**tree, "leaf_n": C, "n": C}, min_samples=m),
        grid_request=Protocol("boosting_grid_request", {"edges": P}),
        grid=Protocol("boosting_grid", {"cuts": P}),
        node_request=Protocol(
            "boosting_node_request",
            {
                **tree,
                "nodes": M,
                "top": M,
                "index_node": M,
                "index_feature": M,
                "index_cut": M,
                "split_feature": M,
                "split_cut": M,
                "rounds": M,
            },
        ),  # fmt: skip
        model=Protocol("boosting_model", tree),
        ack=Protocol("boosting_ack", {}),
    )


def method_protocols(P: Protocols) -> dict[str, Protocol]:
    """The protocol a centre declares for each method it answers (``centre.protocols``: the
    centre-side guard applies these, whatever the request names)."""
    return {
        "moments": P.moments,
        "sketch": P.sketch,
        "set_grid": P.ack,
        "add_trees": P.ack,
        "totals": P.totals,
        "histograms": P.histogram,
        "votes": P.vote,
        "union": P.union,
        "split_sums": P.split_sums,
        "local_trees": P.local_trees,
    }
