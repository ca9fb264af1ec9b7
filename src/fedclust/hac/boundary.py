"""The HAC protocols' declarations and the centre side of their messages (issues 13, 22).

Each message type of the federated HAC algorithms is a :class:`fedclust.federation.Protocol`
whose ``min_samples`` is the run's ``n_min``. A centre's message is checked *at the centre*
before it leaves (:func:`centre_send`): the ledger's rules, then the centre's own
:class:`~fedclust.federation.disclosure.DisclosurePolicy` with its true number of samples. The
run's ``n_min`` can only raise a centre's floor (:func:`floor_of`); a setting below it is
refused before anything is sent.

What the thesis' protocols disclose *by design* is declared as such (issue 22): distances from a
centre's unshared samples to other clusters, the candidate minima (a distance between two local
clusters, possibly two patients), the merge heights and the partial dendrograms are
``per_sample`` fields, so a centre sends them only when its configuration opts in
(``disclosure.default.allow_per_sample`` lists the protocol). Centroids and sizes stay
``aggregate`` / ``count`` over at least the floor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..errors import ConfigError
from ..federation import Ledger, Protocol, declares
from ..federation.disclosure import DisclosurePolicy, configured_policy
from ..privacy.centre import SERVER, centre_send, server_send

Policies = DisclosurePolicy | Mapping[str, DisclosurePolicy] | Sequence[DisclosurePolicy] | None


def policy_of(policies: Policies, name: str, k: int | None = None) -> DisclosurePolicy:
    """Centre ``name``'s policy: the given one (a single policy for all centres, a mapping by
    name or a sequence by index), else its configured one (``disclosure`` section)."""
    if isinstance(policies, DisclosurePolicy):
        return policies
    if isinstance(policies, Mapping) and name in policies:
        return policies[name]
    if isinstance(policies, Sequence) and k is not None and k < len(policies):
        return policies[k]
    return configured_policy(name)


def floor_of(policy: DisclosurePolicy, n_min: int) -> int:
    """The fewest samples the centre lets one released centroid / sum summarise."""
    return policy.floor(int(n_min))


def require(policies: Sequence[DisclosurePolicy], n_min: int | None, per_sample: Sequence[str],
            where: str) -> None:  # fmt: skip
    """Refuse (ConfigError) a run the centres would refuse: an ``n_min`` below a centre's floor
    (None: the protocol releases no aggregate), or per-sample protocols a centre has not opted
    in to."""
    low = [] if n_min is None else [p.nfilter_subset for p in policies
                                    if p.nfilter_subset > int(n_min)]  # fmt: skip
    if low:
        raise ConfigError(
            f"n_min = {n_min} is below the centres' disclosure floor (nfilter_subset = "
            f"{max(low)}): they refuse centroids over fewer samples",
            where=where,
            fix="use n_min >= disclosure.default.nfilter_subset",
        )
    missing = sorted({name for p in policies for name in per_sample
                      if not p.allows_per_sample(name)})  # fmt: skip
    if missing:
        raise ConfigError(
            f"this protocol sends per-sample distances ({', '.join(missing)}); the centres have "
            "not opted in",
            where=where,
            fix="list the protocols under disclosure.default.allow_per_sample (explicit opt-in "
            "to a protocol that discloses distances between patients by design)",
        )


@declares((1,))
def genewise_protocol(n_min: int) -> Protocol:
    """Algorithm 3: per-gene moments (round 1) and additive distance contributions (round 2)."""
    agg = ("mean", "m2", "sumsq", "constant", "d", "norm", "cnorm")
    return Protocol(
        "hac.genewise", {"n": "count", **{k: "aggregate" for k in agg}}, min_samples=int(n_min)
    )


@declares((1,))
def simultaneous_protocol(n_min: int) -> Protocol:
    """§3.3.2: centroids and sizes of the recursive cut; the partial dendrograms' local merge
    heights are distances between patients (per-sample, opt-in). With ``n_min = 1`` every sample
    is its own cluster: the centroids are the samples (per-sample)."""
    return Protocol(
        "hac.simultaneous",
        {
            "centroids": "per_sample" if int(n_min) == 1 else "aggregate",
            "sizes": "count",
            "dendrogram": "per_sample",
            "roots": "metadata",
            "n": "count",
        },
        min_samples=int(n_min),
        per_sample=True,
    )


@declares((1,))
def gradual_protocols(n_min: int) -> dict[str, Protocol]:
    """Algorithm 4: the centroid publication (≥ n_min samples), the centre's size, the
    distance traffic (per-sample by design: opt-in), the server's requests (``request``: the
    layout, the ids a request is about and the public updates broadcast since the centre's last
    request, each a merge ``[0, i, j, h, t]`` or a publication ``[1, cluster, centre, size, 0]``
    with its centroid) and the centre's count of negative radicands at the end (``finish``, a
    diagnostic)."""
    meta, ps = "metadata", "per_sample"
    return {
        "centroid": Protocol(
            "hac.gradual.centroid",
            {"centroid": "aggregate", "size": "count", "cluster": meta},
            min_samples=int(n_min),
        ),
        "setup": Protocol("hac.gradual.setup", {"n": meta}),
        "request": Protocol(
            "hac.gradual.request",
            {
                "events": ps,
                "centroids": "aggregate",
                "home": meta,
                "index": meta,
                "cluster": meta,
                "to": meta,
            },
            min_samples=int(n_min),
            per_sample=True,
        ),  # fmt: skip
        "finish": Protocol("hac.gradual.finish", {"bad_radicands": meta}),
        "samples": Protocol(  # n_min = 1: every sample is its own published cluster
            "hac.gradual.samples", {"rows": ps, "cluster": meta}, per_sample=True
        ),
        "candidate": Protocol(
            "hac.gradual.candidate", {"d": ps, "pair": meta, "reported": ps}, per_sample=True
        ),
        "distances": Protocol(
            "hac.gradual.distances",
            {
                "cluster": meta,
                "to": meta,
                "d": ps,
                "min": ps,
                "max": ps,
                "sum": ps,
                "count": ps,
                "delta": ps,
            },
            per_sample=True,
        ),  # fmt: skip
    }


#: the per-sample protocols a centre must opt in to, per HAC variant
PER_SAMPLE = {
    "gradual": ("hac.gradual.candidate", "hac.gradual.distances"),
    "simultaneous": ("hac.simultaneous",),
    "projection": ("hac.projection",),
    "perturbation": ("hac.perturbation",),
}


#: Algorithm 5's one message: a centre's ``X Q`` (Q public, from the sites' shared seed)
SKETCH = Protocol("hac.projection", {"y": "per_sample"}, per_sample=True)
#: the server's request of Algorithm 5: the sketch (``k``, Q's law ``kind``, its ``density``, the
#: arithmetic ``dtype``) and the index ``run`` each site derives Q's seed from (never the seed)
SKETCH_REQUEST = Protocol(
    "hac.projection.request",
    {"k": "metadata", "run": "metadata", "kind": "metadata", "density": "metadata",
     "dtype": "metadata"},
)  # fmt: skip
#: Algorithm 2's one message: a centre's ``X Q`` with the sites' secret orthogonal Q
PERTURBED = Protocol("hac.perturbation", {"y": "per_sample"}, per_sample=True)
#: the server's request of Algorithm 2: the padded width of Q (or nothing: Q is d × d)
PERTURBED_REQUEST = Protocol("hac.perturbation.request", {"p": "metadata"})

#: centres that hold *generated* points (toy experiments, benchmarks), not patients: only the
#: protocols' own rules apply (no floor above n_min, every per-sample protocol allowed)
SYNTHETIC = DisclosurePolicy(
    nfilter_tab=1,
    nfilter_subset=1,
    allow_per_sample=tuple(p for ps in PER_SAMPLE.values() for p in ps) + ("hac.gradual.samples",),
)


def abstain(led: Ledger, center: str, round: int, protocol: Protocol, reason: str) -> None:
    """Record that ``center`` sends nothing for ``protocol`` in ``round``; ``reason`` names the
    rule and carries no numbers (a count below a floor is itself a disclosure)."""
    led.abstain(center, round, protocol, reason)


__all__ = [
    "PERTURBED", "PERTURBED_REQUEST", "PER_SAMPLE", "SERVER", "SKETCH", "SKETCH_REQUEST",
    "SYNTHETIC", "abstain", "centre_send", "floor_of", "genewise_protocol",
    "gradual_protocols", "policy_of", "require", "server_send", "simultaneous_protocol",
]  # fmt: skip
