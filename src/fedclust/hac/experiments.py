"""The thesis' experiments (seed 001 ch. 4) as functions returning tidy tables.

Each function takes plain arrays and config values and returns a :class:`pandas.DataFrame`; the
rule scripts only read inputs, call these and write the tables / figures.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd
from scipy.cluster.hierarchy import cophenet, linkage
from scipy.spatial.distance import pdist, squareform
from sklearn.metrics import calinski_harabasz_score, silhouette_score

from ..errors import ConfigError, InputDataError
from ..federation import INPROCESS, Ledger, Transport
from ..federation.disclosure import DisclosurePolicy
from ..io import read_table
from ..metrics.hierarchy import ccc, compare, cut, flat_agreement, relative_cophenetic_error
from ..privacy.release_log import ReleaseLog
from ..seeds import derive_seed
from .boundary import SERVER, SYNTHETIC, Policies, policy_of
from .federated import (
    perturbation_clustering,
    projection_center_costs,
    projection_clustering,
)
from .genewise import gene_variances, genewise_clustering, pooled_gene_distances
from .gradual import enforce_monotone, gradual_sharing
from .nmin import nmin_grid  # noqa: F401  (re-exported: callers import it from here)
from .pooled import EUCLIDEAN_ONLY, pooled_linkage
from .simultaneous import simultaneous_run
from .toy import bimodal, blobs, uniform

PREPROCESSINGS = ("sf", "vst")


def check_panels(panels: list, metrics: tuple[str, ...], where: str) -> list[tuple[str, str]]:
    """Validate ``[[preprocessing, metric], ...]`` config entries with a clear message."""
    out = []
    for entry in panels:
        if len(entry) != 2 or entry[0] not in PREPROCESSINGS or entry[1] not in metrics:
            raise ConfigError(
                f"bad panel {entry!r}: expected [preprocessing, metric]",
                where=where,
                fix=f"preprocessing one of {PREPROCESSINGS}, metric one of {metrics}",
            )
        out.append((entry[0], entry[1]))
    return out


def load_cohort(paths: dict[str, str], obs_path: str) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Read the data stage's matrices (``paths``: preprocessing → parquet) and the region
    centers of ``obs.tsv`` (ARCHITECTURE.md data contract). Samples without a center are dropped.
    """
    obs = read_table(obs_path)
    if "center" not in obs.columns:
        raise InputDataError(
            "obs.tsv has no 'center' column", where=str(obs_path), fix="rerun the data stage"
        )
    obs = obs[obs["center"].notna()]
    if len(obs) < 2:
        raise InputDataError("fewer than 2 samples with a center", where=str(obs_path))
    centers = pd.factorize(obs["center"].astype(str), sort=True)[0]
    data = {}
    for prep, path in paths.items():
        x = read_table(path)
        missing = obs.index.difference(x.index)
        if len(missing):
            raise InputDataError(
                f"{len(missing)} samples of obs.tsv are missing from the matrix, e.g. "
                f"{missing[0]!r}",
                where=str(path),
                fix="rerun the data stage so that matrices and obs.tsv agree",
            )
        v = x.loc[obs.index].to_numpy(dtype=float)
        if not np.isfinite(v).all():
            raise InputDataError("the matrix contains NaN or infinite values", where=str(path))
        data[prep] = v
    return data, centers


def _stacked(x: np.ndarray, centers: np.ndarray):
    """Rows reordered so that each center's block is contiguous (the order servers stack in)."""
    order = np.argsort(centers, kind="stable")
    xs, cs = x[order], centers[order]
    return xs, cs, [xs[cs == k] for k in np.unique(cs)]


def _methods(linkages: list[str], metric: str) -> list[str]:
    return [m for m in linkages if metric == "euclidean" or m not in EUCLIDEAN_ONLY]


def largest_center(centers: np.ndarray) -> int:
    return int(np.bincount(np.unique(centers, return_inverse=True)[1]).max())


def _skipped(method: str, metric: str, n_min: int, biggest: int, what: str,
             msg: str | None = None) -> dict:  # fmt: skip
    msg = msg or (
        f"n_min = {n_min} > largest center ({biggest} samples): {what} cannot share anything"
    )
    logging.warning("skipped: %s linkage, %s: %s", method, metric, msg)
    return {"linkage": method, "metric": metric, "n_min": n_min, "skipped": True,
            "skip_reason": msg}  # fmt: skip


def _floor_refuses(policies: list[DisclosurePolicy], n_min: int) -> str | None:
    """Why the centres refuse ``n_min`` (a floor above it), or None."""
    top = max((p.nfilter_subset for p in policies), default=1)
    if top > int(n_min):
        return (f"n_min = {n_min} is below the centres' disclosure floor (nfilter_subset = "
                f"{top}): they refuse centroids over fewer samples")  # fmt: skip
    return None


def _policies(policy: Policies, centers: np.ndarray) -> list[DisclosurePolicy]:
    m = len(np.unique(centers))
    return [policy_of(policy, f"center{k}", k) for k in range(m)]


def _nothing_left(rows: list[dict], where: str, biggest: int) -> None:
    if rows and all(r.get("skipped") for r in rows):
        raise ConfigError(
            f"every n_min setting exceeds the largest center ({biggest} samples) or is below the "
            "centres' disclosure floor: nothing to run",
            where=where,
            fix=f"use n_min values between disclosure.default.nfilter_subset and {biggest}",
        )


def _cut_quality(x: np.ndarray, dist: np.ndarray, lab: np.ndarray) -> tuple[float, float]:
    """(silhouette on precomputed distances, Calinski–Harabasz) of one flat cut."""
    if not 1 < len(np.unique(lab)) < len(lab):
        return np.nan, np.nan
    sil = float(silhouette_score(dist, lab, metric="precomputed"))
    return sil, float(calinski_harabasz_score(x, lab))


def cut_rows(
    x: np.ndarray,
    dist: np.ndarray,
    z_fed: np.ndarray,
    z_pool: np.ndarray,
    k_max: int,
    pooled_cache: dict | None = None,
) -> list[dict]:
    """Per k = 2 … k_max: FMI / ARI (federated vs pooled cut) and silhouette (on the run's
    metric, precomputed distances) and Calinski–Harabasz (Euclidean) of both cuts.
    ``pooled_cache`` (a dict per pooled tree) saves recomputing the pooled cuts' scores."""
    fl = flat_agreement(z_fed, z_pool, k_max)
    cache = pooled_cache if pooled_cache is not None else {}
    rows = []
    for i, k in enumerate(fl["k"]):
        k = int(k)
        sil_f, ch_f = _cut_quality(x, dist, cut(z_fed, k))
        if k not in cache:
            cache[k] = _cut_quality(x, dist, cut(z_pool, k))
        sil_p, ch_p = cache[k]
        rows.append(
            {"k": k, "fmi": fl["fmi"][i], "ari": fl["ari"][i], "silhouette_fed": sil_f,
             "silhouette_pooled": sil_p, "calinski_harabasz_fed": ch_f,
             "calinski_harabasz_pooled": ch_p}
        )  # fmt: skip
    return rows


def _compare(z, zp, k_max, krows: list[dict] | None) -> dict:
    """:func:`compare`, reusing the per-k FMI / ARI when they were computed already."""
    if krows is None:
        return compare(z, zp, k_max)
    return {
        "ccc": ccc(z, zp),
        "rel_error": relative_cophenetic_error(z, zp),
        "fmi": float(np.mean([r["fmi"] for r in krows])),
        "ari": float(np.mean([r["ari"] for r in krows])),
    }


def _sent(led: Ledger, rounds: bool = False) -> dict:
    """Messages and floats that carry something: the server's empty requests (the transport
    seam's "your turn", no field) are not counted, so the columns keep their meaning from
    before the seam; ``rounds``: also the number of rounds with such a message."""
    t = led.messages()
    t = t[(t["sender"] != SERVER) | (t["fields"] != "")]
    out = {"messages": len(t), "floats": int(t["floats"].sum())}
    return {**out, "rounds": int(t["round"].nunique())} if rounds else out


def _uplink(led: Ledger) -> dict:
    """The centres' messages and floats (the sketches; the server's request names only public
    settings and is not counted, as before the transport seam)."""
    t = led.messages()
    t = t[t["sender"] != SERVER]
    return {"messages": len(t), "floats": int(t["floats"].sum())}


def _square(x: np.ndarray, metric: str) -> np.ndarray:
    return squareform(pdist(x, metric))


def gradual_table(
    x: np.ndarray,
    centers: np.ndarray,
    linkages: list[str],
    metric: str,
    n_mins: list[int],
    k_max: int,
    d_min: float = 0.0,
    average_deltas: tuple[str, ...] = ("stored",),
    cuts: list[dict] | None = None,
    policy: Policies = None,
    logs: dict[int, ReleaseLog] | None = None,
    transport: Transport = INPROCESS,
) -> pd.DataFrame:
    """Gradual sharing vs pooled for each linkage × n_min (Figs 4.4, 4.5, 4.7).

    Average linkage runs once per ``average_deltas`` variant (column ``variant``). n_min values
    above the largest center, or below the centres' disclosure floor (``policy``: their
    policies, default the configured ones), are kept as ``skipped`` rows (logged; issues 17,
    22); a :class:`ConfigError` when nothing is left. ``logs``: the centres' release logs of this
    data matrix, kept across the runs (a run they make impossible is a skipped row). ``cuts``:
    per-k rows (FMI, ARI, silhouette, Calinski–Harabasz) are appended to it when given.
    ``transport`` carries the messages (:func:`fedclust.federation.federate`); ``messages`` /
    ``floats`` count what carries something (:func:`_sent`).
    """
    biggest = largest_center(centers)
    pols = _policies(policy, centers)
    dist = _square(x, metric) if cuts is not None else None
    rows = []
    for method in _methods(linkages, metric):
        t0 = time.perf_counter()
        zp = pooled_linkage(x, method, metric)
        pooled_s = time.perf_counter() - t0
        variants = list(average_deltas) if method == "average" else [""]
        pcache: dict = {}
        for n_min in n_mins:
            if biggest < n_min:
                rows.append(_skipped(method, metric, n_min, biggest, "gradual sharing"))
                continue
            if why := _floor_refuses(pols, n_min):
                rows.append(_skipped(method, metric, n_min, biggest, "", why))
                continue
            for var in variants:
                led = Ledger()
                refused0 = sum(lg.refused for lg in (logs or {}).values())
                t = time.perf_counter()
                try:
                    res = gradual_sharing(x, centers, n_min, method, metric, ledger=led,
                                          d_min=d_min, average_delta=var or "stored",
                                          policy=pols, logs=logs,
                                          transport=transport)  # fmt: skip
                except InputDataError as err:  # stuck: the release logs refused what it needs
                    rows.append({**_skipped(method, metric, n_min, biggest, "", err.what),
                                 "variant": var})  # fmt: skip
                    continue
                el = time.perf_counter() - t
                mono = compare(enforce_monotone(res.Z), zp, k_max)
                key = {"linkage": method, "variant": var, "metric": metric, "n_min": n_min}
                krows = None
                if cuts is not None:
                    krows = cut_rows(x, dist, res.Z, zp, k_max, pcache)
                    cuts += [{**key, **r} for r in krows]
                rows.append(
                    {
                        **key,
                        **_compare(res.Z, zp, k_max, krows),
                        "ccc_monotone": mono["ccc"],
                        "fmi_monotone": mono["fmi"],
                        "inversions": res.inversions,
                        "shares": res.shares,
                        "bad_radicands": res.bad_radicands,
                        **_sent(led),
                        "abstentions": led.n_abstentions,
                        "refused_releases": sum(lg.refused for lg in (logs or {}).values())
                        - refused0,
                        "rounds": int(led.messages()["round"].nunique()),
                        "seconds": el,
                        "pooled_seconds": pooled_s,
                        "skipped": False,
                        "skip_reason": "",
                    }
                )
    _nothing_left(rows, "hac.gradual.n_min", biggest)
    return pd.DataFrame(rows)


def simultaneous_table(
    x: np.ndarray,
    centers: np.ndarray,
    linkages: list[str],
    metric: str,
    n_mins,
    k_max: int,
    cuts: list[dict] | None = None,
    policy: Policies = None,
    logs: dict[int, ReleaseLog] | None = None,
    seed: int = 0,
    transport: Transport = INPROCESS,
) -> pd.DataFrame:
    """Simultaneous sharing vs pooled for each linkage × n_min (Fig 4.3).

    Centers below their floor abstain (column ``abstentions``); the federated tree then covers
    the other centers' samples and is compared with the pooled tree of the same samples. n_min
    below the centres' disclosure floor is a skipped row (issue 22); ``logs``: release logs;
    ``transport``: what carries the messages (:func:`fedclust.federation.federate`).
    """
    xs, _, blocks = _stacked(x, centers)
    biggest = max(len(b) for b in blocks)
    pols = _policies(policy, centers)
    dist = _square(xs, metric) if cuts is not None else None
    rows = []
    for method in _methods(linkages, metric):
        zp = pooled_linkage(xs, method, metric)
        for n_min in n_mins:
            if biggest < n_min:
                rows.append(_skipped(method, metric, n_min, biggest, "simultaneous sharing"))
                continue
            if why := _floor_refuses(pols, n_min):
                rows.append(_skipped(method, metric, n_min, biggest, "", why))
                continue
            led = Ledger()
            z, inc = simultaneous_run(blocks, n_min, method, metric, ledger=led, policy=pols,
                                      logs=logs, seed=seed, transport=transport)  # fmt: skip
            ref = zp if inc.all() else pooled_linkage(xs[inc], method, metric)
            rows.append(
                {
                    "linkage": method,
                    "metric": metric,
                    "n_min": n_min,
                    **compare(z, ref, k_max),
                    **_sent(led),
                    "abstentions": led.n_abstentions,
                    "samples_left_out": int((~inc).sum()),
                    "skipped": False,
                    "skip_reason": "",
                }
            )
            if cuts is not None:
                sub = dist[np.ix_(inc, inc)]
                key = {"linkage": method, "metric": metric, "n_min": n_min}
                cuts += [{**key, **r} for r in cut_rows(xs[inc], sub, z, ref, k_max)]
    _nothing_left(rows, "hac.simultaneous.n_min", biggest)
    return pd.DataFrame(rows)


def projection_table(
    x: np.ndarray,
    centers: np.ndarray,
    linkages: list[str],
    metric: str,
    sketch_sizes: list[int],
    seeds: int | range,
    base_seed: int,
    k_max: int,
    estimator: str = "geometric",
    kind: str = "gaussian",
    density: float | None = None,
    dtype: str = "float32",
    threads: int = 1,
    policy: Policies = None,
    transport: Transport = INPROCESS,
) -> pd.DataFrame:
    """Random projections vs pooled per sketch size × seed × linkage (Figs 4.11–4.13).

    ``kind`` applies to the ℓ2 metrics (cityblock always uses Cauchy entries). ``seconds`` is
    the simulation's time (the public matrix drawn once for all centers); ``center_madds_max``
    is what the largest center computes for its own sketch. ``seeds``: a number of seeds, or the
    seed indices to run (a block of the fan-out; each seed derives from its index alone);
    ``transport``: what carries the centres' sketches (each centre draws Q itself)."""
    runs = range(seeds) if isinstance(seeds, int) else seeds
    xs, _, blocks = _stacked(x, centers)
    law = None if metric == "cityblock" else kind
    ref = pdist(xs, metric)
    pooled = {m: pooled_linkage(xs, m, metric) for m in _methods(linkages, metric)}
    rows = []
    for k in sketch_sizes:
        for s in runs:
            led = Ledger()
            t = time.perf_counter()
            # each centre derives Q's seed from the shared base_seed and the run (run_seed)
            _, dist = projection_clustering(
                blocks, "single", metric, k, base_seed, estimator, led, law, dtype, density,
                threads, policy, run=s, transport=transport,
            )  # fmt: skip
            el = time.perf_counter() - t
            madds = max(projection_center_costs(blocks, metric, k, law, density))
            sent = _uplink(led)
            dcorr = float(np.corrcoef(dist, ref)[0, 1])
            for method, zp in pooled.items():
                z = linkage(dist, method=method)
                rows.append(
                    {
                        "linkage": method,
                        "metric": metric,
                        "estimator": estimator if metric == "cityblock" else kind,
                        "sketch": k,
                        "run": s,
                        **compare(z, zp, k_max),
                        "dist_corr": dcorr,
                        **sent,
                        "rounds": 1,
                        "seconds": el,
                        "center_madds_max": madds,
                    }
                )
    return pd.DataFrame(rows)


def exact_baselines(
    x: np.ndarray,
    centers: np.ndarray,
    genes: int,
    seed: int,
    perturbation_genes: int | str = "all",
    n_min: int = 1,
    policy: Policies = None,
    transport: Transport = INPROCESS,
) -> pd.DataFrame:
    """Genewise (Alg. 3, cosine/correlation/Euclidean) and orthogonal perturbation (Alg. 2):
    the largest deviation from pooled distances, and their communication. Genewise: centers
    below ``n_min`` abstain; the reference is then the pooled data of the other centers. The
    perturbation runs on every gene (``"all"``) or the N most variable. Genes are chosen by
    their variance from the centers' moments (:func:`~.genewise.gene_variances`, issue 23).
    ``transport`` carries the genewise and the perturbation's messages."""
    xs, cs, blocks = _stacked(x, centers)
    pols = _policies(policy, cs)
    var = gene_variances(blocks, n_min, policy=pols, transport=transport)
    keep = np.argsort(var)[::-1][: min(genes, xs.shape[1])]
    sizes = np.bincount(np.unique(cs, return_inverse=True)[1])
    floors = np.array([p.floor(n_min) for p in pols])
    inc = (sizes >= floors)[np.unique(cs, return_inverse=True)[1]]
    rows = []
    for metric in ("euclidean", "cosine", "correlation"):
        led = Ledger()
        z, d = genewise_clustering(
            [b[:, keep] for b in blocks], "average", metric, led, n_min=n_min, policy=pols,
            transport=transport,
        )  # fmt: skip
        ref = pooled_gene_distances(xs[inc][:, keep], metric)
        zp = linkage(ref, "average")
        rows.append(
            {
                "method": f"genewise {metric} (Alg. 3)",
                "max_abs_dist_error": float(np.abs(d - ref).max()),
                "max_abs_cophenetic_error": float(np.abs(cophenet(z) - cophenet(zp)).max()),
                "objects": len(keep),
                "abstentions": led.n_abstentions,
                **_sent(led, rounds=True),
            }
        )
    if perturbation_genes != "all":
        top = np.argsort(var)[::-1][: min(int(perturbation_genes), xs.shape[1])]
        xs, blocks = xs[:, top], [b[:, top] for b in blocks]
    led = Ledger()
    z, d = perturbation_clustering(blocks, "average", seed, led, policy=pols, transport=transport)
    zp = pooled_linkage(xs, "average")
    rows.append(
        {
            "method": f"orthogonal perturbation (Alg. 2), {xs.shape[1]} genes",
            "max_abs_dist_error": float(np.abs(d - pdist(xs)).max()),
            "max_abs_cophenetic_error": float(np.abs(cophenet(z) - cophenet(zp)).max()),
            "objects": len(xs),
            **_sent(led),
            "rounds": 1,
        }
    )
    return pd.DataFrame(rows)


# ---- toy experiments -------------------------------------------------------------------------


def toy_bimodal(seed: int, runs: int, linkages: list[str], n_mins: list[int]) -> pd.DataFrame:
    """Figs 4.1–4.2: CCC vs n_min, bimodal 2-D data in 3 centers, gradual sharing."""
    rows = []
    for r in range(runs):
        x, mode, c = bimodal(derive_seed(seed, "bimodal", r))
        for method in linkages:
            zp = pooled_linkage(x, method)
            for n_min in n_mins:
                res = gradual_sharing(x, c, n_min, method, policy=SYNTHETIC)
                rows.append({"run": r, "linkage": method, "n_min": n_min, **compare(res.Z, zp, 11)})
    return pd.DataFrame(rows)


def toy_projection(
    seed: int, runs: int, linkages: list[str], sketch_sizes: list[int], n: int, d: int
) -> pd.DataFrame:
    """Figs 4.8–4.9: CCC and ARI (5 clusters) vs sketch size on blobs and uniform data."""
    rows = []
    for data in ("blobs", "uniform"):
        for r in range(runs):
            s = derive_seed(seed, "toy projection", data, r)
            x = blobs(s, n, d)[0] if data == "blobs" else uniform(s, n, d)
            pooled = {m: pooled_linkage(x, m) for m in linkages}
            for k in sketch_sizes:
                _, dist = projection_clustering(
                    [x], "single", "euclidean", k, s + k, policy=SYNTHETIC
                )
                for method, zp in pooled.items():
                    z = linkage(dist, method=method)
                    ari = flat_agreement(z, zp, 5)["ari"][-1]
                    rows.append(
                        {
                            "data": data,
                            "run": r,
                            "linkage": method,
                            "sketch": k,
                            "ccc": ccc(z, zp),
                            "ari5": ari,
                        }
                    )
    return pd.DataFrame(rows)


def toy_min_sketch(
    seed: int,
    runs: int,
    linkages: list[str],
    sketch_sizes: list[int],
    spreads: list[float],
    n: int,
    d: int,
    target: float = 0.95,
) -> pd.DataFrame:
    """Fig 4.10: smallest sketch size whose mean CCC over runs exceeds ``target`` vs spread σ
    (NaN when no tested size reaches it)."""
    rows = []
    for sigma in spreads:
        cc = {m: {k: [] for k in sketch_sizes} for m in linkages}
        for r in range(runs):
            s = derive_seed(seed, "toy spread", sigma, r)
            x = blobs(s, n, d, 5, sigma)[0]
            pooled = {m: pooled_linkage(x, m) for m in linkages}
            for k in sketch_sizes:
                _, dist = projection_clustering(
                    [x], "single", "euclidean", k, s + k, policy=SYNTHETIC
                )
                for m in linkages:
                    cc[m][k].append(ccc(linkage(dist, method=m), pooled[m]))
        for m in linkages:
            ok = [k for k in sketch_sizes if np.mean(cc[m][k]) > target]
            rows.append({"sigma": sigma, "linkage": m, "min_sketch": min(ok) if ok else np.nan})
    return pd.DataFrame(rows)


def pca_table(data: dict[str, np.ndarray], n_components: int = 20) -> pd.DataFrame:
    """Figs 3.1–3.2: explained variance ratio per component after size factors vs VST."""
    from sklearn.decomposition import PCA

    rows = []
    for prep, x in data.items():
        k = min(n_components, *x.shape)
        ratio = PCA(n_components=k, svd_solver="full").fit(x).explained_variance_ratio_
        rows += [
            {"prep": prep, "component": i + 1, "explained": r, "cumulative": c}
            for i, (r, c) in enumerate(zip(ratio, np.cumsum(ratio), strict=True))
        ]
    return pd.DataFrame(rows)
