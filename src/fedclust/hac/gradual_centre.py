"""The centre side of gradual sharing (Algorithm 4, spec §5.2) on the transport seam.

:class:`GradualSide` is mixed into :class:`.centre.HacCentre`: the centre answers the server's
requests of :func:`.gradual.gradual_server` with its own state
(:class:`.gradual_state.GradualCenter`: its block, its local clusters, its distances) and its own
copy of the public state (:class:`.gradual_state._Public`), built only from what the requests carry:
the layout (``home``, its ``index``) with the first request, then every public update broadcast
since its last request — merges ``[0, i, j, h, t]`` and publications ``[1, cluster, centre, size,
0]`` with their centroids — applied in the order they happened before the centre answers. A merge of
one of its own local clusters is its own candidate: it uses its true distance (the broadcast height
is ``max(d, d_min)``). Its floor (``n_min`` raised to its policy's), its opt-in to the per-sample
protocols and its release log (a publication the log refuses is an abstention: the part stays
unshared) are its own settings.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..federation import Abstain
from ..federation.guard import centre_policy
from .boundary import PER_SAMPLE
from .gradual_state import GradualCenter, _Public
from .pooled import centred_rows

REFUSED = "n_min below the centre's floor, or no opt-in to the per-sample protocols"
LOGGED = "the centre's release log refuses this part for now"


class GradualSide:
    """Methods of Algorithm 4's centre (module docstring); the host class provides ``x``,
    ``n_samples``, ``n_min``, ``method``, ``metric``, ``log``, ``d_min``,
    ``average_delta`` and ``floor``."""

    _gradual: Any = None

    def _gradual_refuses(self) -> bool:
        policy = centre_policy(self)
        names = PER_SAMPLE["gradual"] + (("hac.gradual.samples",) if self.n_min == 1 else ())
        return self.n_min < self.floor or not all(policy.allows_per_sample(p) for p in names)

    def _gradual_receive(self, config: dict) -> Any:
        """Start (the layout) and apply the public updates the request carries."""
        if "home" in config:
            home = np.asarray(config["home"], dtype=int)
            k, n, m = int(config["index"]), len(home), int(home.max()) + 1
            slots = np.flatnonzero(home == k)
            if len(slots) != self.n_samples:
                raise ValueError(f"{self.cid}: the layout gives it {len(slots)} samples")
            all_public = self.n_min == 1
            x, metric = centred_rows(self.x, self.metric)
            cfg = {"method": self.method, "metric": metric, "n_min": self.n_min,
                   "d_min": float(self.d_min), "all_public": all_public,
                   "delta": self.method == "average" and self.average_delta == "stored"
                   and m > 1}  # fmt: skip
            pub = _Public(n, m, n if all_public else n // self.n_min, home,
                          self.method in ("centroid", "ward"))  # fmt: skip
            if all_public:
                pub.publish_all()
            self._gradual = GradualCenter(k, slots, x, pub, cfg, centre_policy(self), self.log)
        st = self._gradual
        if st is None:
            raise RuntimeError(f"{self.cid}: a gradual sharing request before the layout")
        cs = config.get("centroids")
        ci = 0
        for e in np.asarray(config.get("events", np.zeros((0, 5))), dtype=float):
            if e[0] == 0:
                st.on_merge(int(e[1]), int(e[2]), float(e[3]), int(e[4]))
            else:
                st.on_published(int(e[1]), int(e[2]), int(e[3]), np.asarray(cs[ci], dtype=float))
                ci += 1
        return st

    def _gradual_reply(self) -> dict:
        st = self._gradual
        out, st.reply = st.reply, None
        if out is None:
            raise RuntimeError(f"{self.cid}: nothing to answer")
        return out

    def gradual_setup(self, parameters: Any, config: dict) -> dict | Abstain:
        """Its size, or an abstention when the run is below its floor or it has not opted in."""
        return Abstain(REFUSED) if self._gradual_refuses() else {"n": self.n_samples}

    def gradual_samples(self, parameters: Any, config: dict) -> dict | Abstain:
        """``n_min = 1``: every sample is its own published cluster (per-sample, opt-in)."""
        st = self._gradual_receive(config)
        return {"rows": st.x, "cluster": st.slots.astype(np.int64)}

    def gradual_candidate(self, parameters: Any, config: dict) -> dict:
        """Its closest communicating pair (``reported``: ``max(d, d_min)``)."""
        return self._gradual_receive(config).candidate()

    def gradual_absorb(self, parameters: Any, config: dict) -> dict:
        """Its local cluster joined a global one: that cluster's distances to the globals."""
        self._gradual_receive(config)
        return self._gradual_reply()

    def gradual_publish(self, parameters: Any, config: dict) -> dict | Abstain:
        """The centroid of a part of ≥ n_min of its samples (one it finds ready itself), unless
        its release log refuses it."""
        st = self._gradual_receive(config)
        slot = int(config["cluster"])
        if slot not in st.ready():
            raise RuntimeError(f"{self.cid}: cluster {slot} has no part of n_min samples here")
        if st.log is not None and not st.log.release(st.unshared_part(slot)):
            return Abstain(LOGGED)
        return st.publish_slot(slot)

    def gradual_row(self, parameters: Any, config: dict) -> dict:
        """The published cluster's distances to the globals (first share) and δ (average)."""
        self._gradual_receive(config)
        return self._gradual_reply()

    def gradual_correction(self, parameters: Any, config: dict) -> dict:
        """Its aggregates correcting the server's distances to a published cluster."""
        self._gradual_receive(config)
        return self._gradual_reply()

    def gradual_view(self, parameters: Any, config: dict) -> dict:
        """Centroid / Ward: distances from its view (own points exact, public centroids)."""
        st = self._gradual_receive(config)
        sg, to = int(config["cluster"]), np.asarray(config["to"], dtype=np.int64)
        d = np.array([st.centroid_distance(sg, int(b)) for b in to])
        return {"cluster": sg, "to": to, "d": d}

    def gradual_finish(self, parameters: Any, config: dict) -> dict:
        """The last updates; its count of negative centroid / Ward radicands (a diagnostic)."""
        return {"bad_radicands": int(self._gradual_receive(config).bad)}
