"""The centres of the generative stage: each holds only its own data (``cid``, ``n_samples``)
and answers the server's messages, ``method(parameters, config) -> message | Abstain``.

Disclosure floors are the centre's own (``min_samples`` given at construction, config
``generative.min_samples``): a centre that would summarise fewer samples abstains.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from fedclust.federation import Abstain, unit_floor
from fedclust.federation.disclosure import DisclosurePolicy
from fedclust.federation.guard import centre_policy

from . import data as D
from . import dgd, savae
from . import protocols as P
from .nets import get_parameters, set_parameters


class _Centre:
    """Shared parts: identity, floor, the federated standardisation of gaussian columns."""

    def __init__(self, cid: str, x: np.ndarray, mask: np.ndarray, spec, min_samples: int,
                 disclosure: DisclosurePolicy | None = None) -> None:  # fmt: skip
        self.cid = str(cid)
        #: the centre's own disclosure settings (None: its entry of the configured
        #: ``disclosure`` section, :mod:`fedclust.federation.disclosure`)
        self.disclosure = disclosure
        self._x = np.asarray(x, float)  # the centre's data, its own units (never sent)
        self._mask = np.asarray(mask, np.float32)
        self.spec = spec
        self.min_samples = int(min_samples)
        self.scaler: D.Scaler | None = None

    @property
    def n_samples(self) -> int:
        return int(self._x.shape[0])

    def _too_small(self) -> Abstain | None:
        if self.n_samples < self.min_samples:
            return Abstain(f"{self.n_samples} samples < min_samples={self.min_samples}")
        return None

    def moments(self, parameters: Any, config: dict) -> dict | Abstain:
        """``generative_moments`` over the gaussian columns (``config['columns']``)."""
        cols = np.asarray(config["columns"], int)
        m = D.local_moments(self._x, self._mask, self.spec)
        n = m["n"][cols]
        if n.size and n.min() < self.min_samples:
            return Abstain(
                f"a gaussian column has {int(n.min())} observed values "
                f"< min_samples={self.min_samples}"
            )
        return {"sum": m["sum"][cols], "sumsq": m["sumsq"][cols], "n": n}

    def receive_global(self, parameters: list[np.ndarray], config: dict) -> dict | Abstain:
        """The final global model (after the last FedAvg round); answers the sample count."""
        if (a := self._too_small()) is not None:
            return a
        set_parameters(self.model, parameters)
        return {"n": self.n_samples}

    def standardise(self, parameters: Any, config: dict) -> dict | Abstain:
        """Receive the global mean / SD of the gaussian columns; answer the sample count."""
        if (a := self._too_small()) is not None:
            return a
        cols = np.asarray(config["columns"], int)
        p = self.spec.n_features
        mean, sd = np.zeros(p), np.ones(p)
        mean[cols], sd[cols] = np.asarray(config["mean"]), np.asarray(config["sd"])
        self._set_scaler(D.Scaler(mean, sd))
        return {"n": self.n_samples}

    def _set_scaler(self, scaler: D.Scaler) -> None:
        raise NotImplementedError


class SavaeCentre(_Centre):
    """A SAVAE node (D6.2 §6.5–6.6): its covariates (raw units, NaN = missing), mask, labels and
    optional survival; a model built by ``build()`` (weights replaced by the server's) and a
    :class:`~.savae.Trainer` kept across rounds (Adam state, minibatch generator)."""

    def __init__(
        self,
        cid: str,
        table: D.Tabular,
        mask: np.ndarray,
        build: Callable,
        train: dict,
        seed: int,
        min_samples: int,
        disclosure: DisclosurePolicy | None = None,
    ) -> None:
        super().__init__(cid, table.x, mask, table.spec, min_samples, disclosure)
        self._table = table
        self._build, self._train, self._seed = build, dict(train), int(seed)
        self.model: savae.SAVAE | None = None
        self.trainer: savae.Trainer | None = None
        self._virtual: D.Tabular | None = None
        if not any(k == "gaussian" for k in table.spec.kinds):
            self._set_scaler(D.fit_scaler(self._x, self._mask, self.spec))

    @property
    def protocols(self) -> dict:
        """The protocol of every method this centre answers (the guard applies its own)."""
        ms = self.min_samples
        return {"moments": P.moments(ms), "standardise": P.received("generative_standardised", ms),
                "fit": P.savae_fit(ms), "receive_global": P.received("savae_fit_received", ms),
                "virtual_patients": P.virtual_patients(ms),
                "receive_virtual": P.received("savae_virtual_received", ms)}  # fmt: skip

    # ---- data and trainer
    def _training_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
        t, v = self._table, self._virtual
        if v is None:
            return self._x, self._mask, t.t, t.d
        x = np.concatenate([self._x, v.x])
        m = np.concatenate([self._mask, np.ones_like(v.x, dtype=np.float32)])
        tt = None if t.t is None else np.concatenate([t.t, v.t])
        dd = None if t.d is None else np.concatenate([t.d, v.d])
        return x, m, tt, dd

    def _set_scaler(self, scaler: D.Scaler) -> None:
        self.scaler = scaler
        x, m, t, d = self._training_rows()
        self.model = self._build()
        self.trainer = savae.Trainer(
            self.model,
            savae.tensors(scaler.transform(x), m, t, d),
            lr=self._train["lr"],
            batch_size=self._train["batch_size"],
            w=self._train["w"],
            generator=torch.Generator().manual_seed(self._seed),
        )

    def standardise_locally(self) -> None:
        """Isolated node: its own scaler (no message)."""
        x, m, _, _ = self._training_rows()
        self._set_scaler(D.fit_scaler(x, m, self.spec))

    # ---- messages
    def fit(self, parameters: list[np.ndarray], config: dict):
        """FedAvg update (``savae_fit``): local epochs from the global parameters."""
        if (a := self._too_small()) is not None:
            return a
        set_parameters(self.model, parameters)
        losses = self.trainer.epochs(int(config["epochs"]))
        return get_parameters(self.model), self.n_samples, {"loss": float(losses[-1])}

    def virtual_patients(self, parameters: Any, config: dict) -> dict | Abstain:
        """Once: ``n_virtual`` virtual patients from this node's trained generator (z ~ N(0, I),
        decoded), labelled by its latent-space classifier, times from its Weibull decoder
        (``savae_virtual_patients``). Values in the data's units."""
        if (a := self._too_small()) is not None:
            return a
        gen = torch.Generator().manual_seed(self._seed + 1)
        z, xs, t = savae.generate(
            self.model, int(config["n_virtual"]), gen, str(self._train.get("draw", "mean"))
        )
        x = self.scaler.inverse(xs)
        y = self._latent_classifier().predict(z)
        return {"x": x, "y": y, "t": t, "n": self.n_samples}

    def receive_virtual(self, parameters: Any, config: dict) -> dict:
        """Store the virtual patients (events at their drawn times) for local training."""
        x = np.asarray(config["x"], float)
        t = config.get("t")
        has_t = t is not None and self._table.t is not None
        self._virtual = D.Tabular(
            x,
            self._table.names,
            self.spec,
            np.asarray(config["y"]),
            np.asarray(t, float) if has_t else None,
            np.ones(len(x), int) if has_t else None,
        )
        return {"n": self.n_samples}

    # ---- local work (isolated arms; the node's own evaluation)
    def train_local(self, epochs: int) -> list[float]:
        return self.trainer.epochs(int(epochs))

    def training_latents(self) -> tuple[np.ndarray, np.ndarray]:
        """(μ of every training row, labels): own rows, then virtual ones."""
        x, _, _, _ = self._training_rows()
        y = (
            self._table.y
            if self._virtual is None
            else np.concatenate([self._table.y, self._virtual.y])
        )
        return savae.embed(self.model, self.scaler.transform(x)), y

    def training_recovered(self) -> tuple[np.ndarray, np.ndarray]:
        x, m, _, _ = self._training_rows()
        y = (
            self._table.y
            if self._virtual is None
            else np.concatenate([self._table.y, self._virtual.y])
        )
        return savae.reconstruct(self.model, self.scaler.transform(x), m), y

    def _latent_classifier(self):
        from sklearn.linear_model import LogisticRegression

        z, y = self.training_latents()
        return LogisticRegression(max_iter=2000, random_state=0).fit(z, y)


class DgdCentre(_Centre):
    """A DGD centre: its samples, its own representations and their optimiser (never sent), a
    local copy of the decoder + mixture replaced by the server's parameters every round. Its
    ``dgd_fit`` update passes the per-unit floor on the decoder
    (:mod:`fedclust.federation.unit_floor`): a decoder hidden unit that 0 < m < floor of its
    samples reached keeps the received weights (a first-layer unit reached by one sample gives
    that sample's representation, its outgoing column the sample's error)."""

    def __init__(
        self,
        cid: str,
        x: np.ndarray,
        mask: np.ndarray,
        spec,
        build: Callable,
        train: dgd.Training,
        seed: int,
        min_samples: int,
        disclosure: DisclosurePolicy | None = None,
    ) -> None:
        super().__init__(cid, x, mask, spec, min_samples, disclosure)
        self._build, self._train, self._seed = build, train, int(seed)
        self.model: dgd.DGD | None = None
        self.trainer: dgd.Trainer | None = None
        self.units_withheld = 0  # the decoder's per-unit floor, over its rounds
        if not any(k == "gaussian" for k in spec.kinds):  # nothing to standardise
            self._set_scaler(D.fit_scaler(self._x, self._mask, self.spec))

    @property
    def protocols(self) -> dict:
        """The protocol of every method this centre answers (the guard applies its own)."""
        ms = self.min_samples
        return {
            "moments": P.moments(ms),
            "standardise": P.received("generative_standardised", ms),
            "fit": P.dgd_fit(ms),
            "receive_global": P.received("dgd_fit_received", ms),
        }

    def _set_scaler(self, scaler: D.Scaler) -> None:
        self.scaler = scaler
        self.model = self._build()
        self.trainer = dgd.Trainer(
            self.model,
            scaler.transform(self._x),
            self._mask,
            self._train,
            torch.Generator().manual_seed(self._seed),
        )

    def standardise_locally(self) -> None:
        self._set_scaler(D.fit_scaler(self._x, self._mask, self.spec))

    def fit(self, parameters: list[np.ndarray], config: dict):
        """FedAvg update (``dgd_fit``): decoder + mixture parameters only."""
        if (a := self._too_small()) is not None:
            return a
        set_parameters(self.model, parameters)
        touched = unit_floor.mlp_units(self.model.decoder, self.n_samples)
        losses = self.trainer.epochs(int(config["epochs"]), touched)
        params = get_parameters(self.model)
        # the decoder's (W, b) in state_dict order; the mixture's parameters are not units
        dec = [i for i, k in enumerate(self.model.state_dict()) if k.startswith("decoder.")]
        received = [np.asarray(parameters[i], params[i].dtype) for i in dec]
        n = unit_floor.withhold(unit_floor.pairs([params[i] for i in dec]),
                                unit_floor.pairs(received), touched,
                                centre_policy(self).floor(self.min_samples))  # fmt: skip
        self.units_withheld += n
        metrics = {"loss": float(losses[-1]), **({"units_withheld": n} if n else {})}
        return params, self.n_samples, metrics

    def train_local(self, epochs: int) -> list[float]:
        return self.trainer.epochs(int(epochs))

    def representations(self) -> np.ndarray:
        """This centre's training representations (local evaluation only)."""
        return self.trainer.representations()


class RadialCentre:
    """A RadialGAN centre: its own feature set, training / test rows (scaled to [0, 1] with its
    own training minima / maxima), labels, and F_i, G_i, D_i with their optimisers. Sends latent
    codes of its rows and the gradient of its loss with respect to the others' codes; nothing
    else of its data leaves it.

    Between the three messages of one iteration (``encode`` → ``step`` → ``apply``) it keeps
    only plain values: the minibatch, and the F/G gradients of ``step`` as arrays. ``step`` and
    ``apply`` recompute the codes F_i(batch) (F_i changes only in ``apply``: the same numbers),
    so the centre survives being stored as bytes between messages (a deployment answers every
    message in a fresh process; an autograd graph and a parameter's ``.grad`` do not survive
    ``torch.save``)."""

    def __init__(self, cid: str, x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray,
                 y_test: np.ndarray, build: Callable, cfg: dict, seed: int,
                 min_samples: int, disclosure: DisclosurePolicy | None = None) -> None:  # fmt: skip
        from . import radialgan as R

        self.cid = str(cid)
        self.disclosure = disclosure
        self.min_samples = int(min_samples)
        self.seed = int(seed)
        #: the centre's own rows as given (its file on a deployment; never sent)
        self.rows = tuple(np.asarray(a) for a in (x_train, y_train, x_test, y_test))
        fill = np.nanmedian(x_train, axis=0)
        fill = np.where(np.isnan(fill), 0.0, fill)
        xtr = np.where(np.isnan(x_train), fill, x_train)
        xte = np.where(np.isnan(x_test), fill, x_test)
        lo, hi = xtr.min(axis=0), xtr.max(axis=0)
        span = np.where(hi > lo, hi - lo, 1.0)
        self._x = ((xtr - lo) / span).astype(np.float32)
        self._x_test = ((xte - lo) / span).astype(np.float32)
        self._y = np.asarray(y_train, int)
        self._y_test = np.asarray(y_test, int)
        self._real = R.xy(self._x, self._y.astype(np.float32))
        self.node = build(self._x.shape[1])
        self._cfg = dict(cfg)
        lr = float(cfg["lr"])
        self.d_opt = torch.optim.Adam(self.node.D.parameters(), lr=lr)
        self.g_opt = torch.optim.Adam(self.node.generator_parameters(), lr=lr)
        self.gen = torch.Generator().manual_seed(int(seed))
        self._batch: torch.Tensor | None = None  # this iteration's minibatch (no graph)
        self._grads: list[np.ndarray | None] | None = None  # F/G gradients of ``step``

    @property
    def n_samples(self) -> int:
        return int(self._x.shape[0])

    @property
    def protocols(self) -> dict:
        """The protocol of every method this centre answers (the guard applies its own)."""
        ms = self.min_samples
        return {"encode": P.radialgan_codes(ms), "step": P.radialgan_code_grads(ms),
                "apply": P.received("radialgan_applied", ms),
                "augment": P.radialgan_evaluation(ms)}  # fmt: skip

    def _too_small(self) -> Abstain | None:
        if self.n_samples < self.min_samples:
            return Abstain(f"{self.n_samples} samples < min_samples={self.min_samples}")
        return None

    def batch(self, size: int) -> torch.Tensor:
        """A minibatch drawn with replacement from the centre's generator."""
        idx = torch.randint(0, self.n_samples, (int(size),), generator=self.gen)
        return self._real[idx]

    def _codes(self) -> torch.Tensor:
        """F_i of this iteration's minibatch, with its graph (recomputed in every message)."""
        if self._batch is None:
            raise RuntimeError(f"centre {self.cid!r}: no minibatch; 'encode' comes first")
        return self.node.encode(self._batch)

    def encode(self, parameters: Any, config: dict) -> dict | Abstain:
        """``radialgan_codes``: F_i of a fresh minibatch (the minibatch is kept for this
        iteration) or, with ``all``, of every training row (the augmentation, eq. 5.8)."""
        if (a := self._too_small()) is not None:
            return a
        if int(config.get("all", 0)):
            with torch.no_grad():
                return {"z": self.node.encode(self._real).numpy(), "n": self.n_samples}
        self.g_opt.zero_grad()
        self._batch, self._grads = self.batch(int(config["batch"])), None
        return {"z": self._codes().detach().numpy(), "n": self.n_samples}

    def step(self, parameters: Any, config: dict) -> dict | Abstain:
        """One iteration at this centre: a D_i ascent step on its real minibatch vs G_i of the
        others' codes, then its F/G loss (adversarial + λ·cycle); its own gradients are kept
        (as arrays) for :meth:`apply`, the gradients with respect to the received codes go back
        (``radialgan_code_grads``)."""
        from . import radialgan as R

        if (a := self._too_small()) is not None:
            return a
        z = self._codes()  # first, as encode built it: the same graph, the same sums
        codes = [torch.tensor(np.asarray(c, np.float32), requires_grad=True)
                 for c in config["codes"]]  # fmt: skip
        alphas = [float(a) for a in config["alpha"]]
        self.d_opt.zero_grad()
        R.discriminator_loss(self.node, self._batch, codes, alphas).backward()
        self.d_opt.step()
        loss = R.generator_loss(self.node, self._batch, z, codes, alphas,
                                float(self._cfg["lam"]), str(self._cfg["gan_loss"]))  # fmt: skip
        loss.backward()
        grads = [c.grad.numpy() for c in codes]
        params = self.node.generator_parameters()
        self._grads = [None if p.grad is None else p.grad.numpy().copy() for p in params]
        for p in params:
            p.grad = None
        return {"z_grad": grads, "loss": float(loss.detach()), "n": self.n_samples}

    def apply(self, parameters: Any, config: dict) -> dict | Abstain:
        """Back-propagate the others' gradients through this centre's codes into F_i (added to
        the kept gradients of :meth:`step`), then one joint step of F_i and G_i."""
        if (a := self._too_small()) is not None:
            return a
        if self._grads is None:
            raise RuntimeError(f"centre {self.cid!r}: no gradients to apply; 'step' comes first")
        g = torch.as_tensor(np.asarray(config["z_grad"], np.float32))
        z = self._codes()
        for p, kept in zip(self.node.generator_parameters(), self._grads, strict=True):
            p.grad = None if kept is None else torch.tensor(kept)
        z.backward(g)
        self.g_opt.step()
        self.g_opt.zero_grad()
        self._batch = self._grads = None
        return {"n": self.n_samples}

    def augment(self, parameters: Any, config: dict) -> dict | Abstain:
        """Eq. 5.8 at this centre: G_i of the others' codes as virtual rows (label = decoded
        y > 0.5); logistic regression on its own rows and on the augmented set, both scored on
        its test rows (``radialgan_evaluation``)."""
        from sklearn.linear_model import LogisticRegression

        from .evaluate import auc

        if (a := self._too_small()) is not None:
            return a
        with torch.no_grad():
            fakes = [self.node.decode(torch.as_tensor(np.asarray(c, np.float32))).numpy()
                     for c in config["codes"]]  # fmt: skip
        p = self._x.shape[1]
        xv = np.concatenate([f[:, :p] for f in fakes]) if fakes else np.zeros((0, p))
        yv = (np.concatenate([f[:, p] for f in fakes]) > 0.5).astype(int) if fakes else np.zeros(0)
        c = float(self._cfg["classifier_c"])
        classes = np.array([0, 1])

        def score(x, y):
            if len(np.unique(y)) < 2:
                return float("nan")
            clf = LogisticRegression(C=c, max_iter=2000, random_state=0).fit(x, y)
            return auc(self._y_test, clf.predict_proba(self._x_test), classes)

        return {
            "auc_local": score(self._x, self._y),
            "auc_augmented": score(np.concatenate([self._x, xv]), np.concatenate([self._y, yv])),
            "virtual": int(len(yv)),
            "virtual_positive": float(yv.mean()) if len(yv) else float("nan"),
            "n": self.n_samples,
        }
