"""The generative stage's federated training (D6.2) as deployed stages
(:mod:`fedclust.deployment`): ``savae``, ``dgd``, ``radialgan`` and ``savae_virtual``.

``savae`` — one run is the ``federated`` arm of one SAVAE unit (a data set and a corruption rate
r) of :func:`.experiment.run_savae` (§6.6, the good node / poor node test): the federated
standardisation of the gaussian columns (``generative_moments`` → global mean / SD → every
centre), then ``rounds`` FedAvg rounds of ``local_epochs`` local epochs under ``savae_fit`` and
the final model to every centre — the same server function, :func:`.server.savae_fedavg`. A
centre's file holds its own rows (raw units, NaN = missing), its mask (the poor node's
corruption), labels, survival times and events (if any), its feature families, its name and its
training seed; it keeps its scaler and its :class:`~.savae.Trainer` (Adam state, minibatch
generator: every random draw of SAVAE's training comes from it, so the numbers do not depend on
the process) between messages (``Context.state`` on a deployment).

``dgd`` — one run is the federated arm of one DGD unit of :func:`.experiment.run_dgd`: the same
standardisation, then FedAvg of the decoder and the mixture under ``dgd_fit``
(:func:`.server.dgd_fedavg`). A centre's file holds its training rows, feature families, name
and seed; its per-sample representations and their optimiser live in its
:class:`~.dgd.Trainer` and stay in the centre's state between rounds — never in a message.

The run's parameters (:func:`params_from_config`, :func:`dgd_params_from_config`) are the
architecture, the local training settings, the rounds, the unit's seed labels (the start
point) and the floor; the feature families (and SAVAE's time decoder) come from the handshake
(the centres must agree). Outputs: the final global ``parameters``, the per-round ``rounds``
table (mean loss, participants) and the ledger. The arms' metrics are evaluations on held-out
rows (and the DGD's training representations, at their centres), never messages, and stay with
the workflow. FedAvg may go on without a lost centre when the run sets ``min_available``
(``drops``).

``radialgan`` — one RadialGAN unit (test bed × α rule) of :func:`.experiment.run_radialgan`:
:func:`.server.radialgan` over centres with their own feature sets. A centre's file holds its
own training / test rows as given (scaled at load, as in the workflow), its name, its minibatch
seed and its site's opt-in to ``radialgan_codes`` / ``radialgan_code_grads``. Across the three
messages of one iteration (``encode`` → ``step`` → ``apply``) a
:class:`~.centre.RadialCentre` keeps only its minibatch and the F/G gradients of ``step`` as
arrays, and recomputes the codes F_i(batch) in ``step`` and ``apply`` (F_i changes only in
``apply``): no autograd graph or ``.grad`` needs to survive the bytes a deployment keeps the
centre as between messages, and the workflow's numbers did not move. Outputs: ``evaluation``,
``losses``, ``released``, ``sizes``, the ledger. Exact: a lost centre stops the run.

``savae_virtual`` — SAVAE's virtual-patients relay of one unit (:func:`.server.virtual_patients`,
the exchange :func:`.experiment.run_savae` runs in-process after the isolated good node's local
training): the good site trains its own generator when its centre is loaded (its own scaler,
rounds × local epochs; no message), its ``n_virtual`` virtual patients go to the server and on
to the poor node. Outputs: ``n_virtual`` and ``relayed_sha256`` (a digest of the rows the
server relayed; the rows are not written). The poor node's training on them is its own local
work, as in the workflow's virtual arm. Exact.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedclust.deployment import (
    DeployedStage,
    WorkflowHook,
    WorkflowRun,
    cap,
    load_npz,
    pick,
    register,
    same_schema,
    save_npz,
)
from fedclust.federation import History

from . import data as D
from . import dgd, savae
from . import protocols as P
from . import server as S
from .centre import SavaeCentre
from .likelihoods import FeatureSpec
from .nets import get_parameters

NAME = "savae"


def params_from_config(cfg: Mapping[str, Any], dataset: str, rate: float,
                       seed: int) -> dict[str, Any]:  # fmt: skip
    """The run parameters of SAVAE unit (``dataset``, ``rate``) of the workflow's
    ``generative`` config; ``seed``: the workflow's seed (the start point)."""
    from .experiment import savae_training, savae_unit

    sv = cfg["savae"]
    train, rounds, local = savae_training(sv, True)
    arch = savae.Arch.from_config(sv["model"])
    return {
        "model": "savae", "unit": list(savae_unit(dataset, rate)), "seed": int(seed),
        "arch": {"latent": arch.latent, "hidden": list(arch.hidden),
                 "time_hidden": list(arch.time_hidden), "activation": arch.activation},
        "train": train, "rounds": rounds, "local_epochs": local,
        "min_samples": int(cfg["min_samples"]),
    }  # fmt: skip


def centres(table: D.Tabular, cfg: Mapping[str, Any], dataset: str, rate: float,
            seed: int) -> list[SavaeCentre]:  # fmt: skip
    """The unit's two federated nodes (good: clean rows; poor: corrupted), as
    :func:`.experiment.run_savae` builds them for its ``federated`` arm (CPU)."""
    from .experiment import build_savae, savae_centre, savae_split, savae_training, savae_unit

    sv, unit = cfg["savae"], savae_unit(dataset, rate)
    train, _, _ = savae_training(sv, table.t is not None)
    _, (good, _, _), (poor_c, pm) = savae_split(table, sv, dataset, rate, seed)
    build = functools.partial(build_savae, table.spec, savae.Arch.from_config(sv["model"]),
                              table.t is not None, int(seed), unit, "cpu")  # fmt: skip
    ms = int(cfg["min_samples"])
    return [savae_centre("good", good, D.observed(good.x), build, train, seed, unit, ms),
            savae_centre("poor", poor_c, pm, build, train, seed, unit, ms)]  # fmt: skip


# ---------------------------------------------------------------- centre side
def save(centre: SavaeCentre, path: Path) -> None:
    t = centre._table
    has_time = t.t is not None
    save_npz(
        path, x=t.x, mask=centre._mask, y=t.y, names=np.asarray(t.names, dtype=str),
        spec_names=np.asarray(t.spec.names, dtype=str),
        kinds=np.asarray(t.spec.kinds, dtype=str), n_cats=np.asarray(t.spec.n_cats, int),
        time=t.t if has_time else np.zeros(0), event=t.d if has_time else np.zeros(0, int),
        has_time=has_time, cid=centre.cid, seed=int(centre._seed),
    )  # fmt: skip


def setup(params: Mapping[str, Any]) -> None:
    """Declare the protocols the centre answers under (a deployment answers every message in a
    fresh process, where only declared protocols resolve)."""
    ms = int(params["min_samples"])
    P.moments(ms), P.received("generative_standardised", ms), P.savae_fit(ms)
    P.received("savae_fit_received", ms)


def _spec(kinds: Sequence[str], n_cats: Sequence[int], names: Sequence[str]) -> FeatureSpec:
    return FeatureSpec(tuple(map(str, kinds)), tuple(int(c) for c in n_cats),
                       tuple(map(str, names)))  # fmt: skip


def _arch(params: Mapping[str, Any]) -> savae.Arch:
    return savae.Arch.from_config(dict(params["arch"]))


def _build(spec: FeatureSpec, has_time: bool, params: Mapping[str, Any]):
    from .experiment import build_savae

    return functools.partial(build_savae, spec, _arch(params), bool(has_time),
                             int(params["seed"]), tuple(params["unit"]), "cpu")  # fmt: skip


def load(path: Path, params: Mapping[str, Any]) -> SavaeCentre:
    d = load_npz(path)
    has_time = bool(d["has_time"])
    names = [str(n) for n in d["names"]]
    spec = _spec(d["kinds"], d["n_cats"], d["spec_names"])
    t, e = (d["time"], d["event"]) if has_time else (None, None)
    table = D.Tabular(np.asarray(d["x"], float), names, spec, d["y"], t, e)
    train = {**params["train"], **({} if has_time else {"w": 0.0})}  # as run_savae: no times
    return SavaeCentre(str(d["cid"]), table, d["mask"], _build(spec, has_time, params), train,
                       int(d["seed"]), int(params["min_samples"]))  # fmt: skip


def describe(centre: SavaeCentre) -> dict[str, Any]:
    s = centre.spec
    # a handshake carries scalars and lists of strings (category counts as strings)
    return {"kinds": list(s.kinds), "n_cats": [str(int(c)) for c in s.n_cats],
            "names": list(s.names), "time": centre._table.t is not None}  # fmt: skip


# ---------------------------------------------------------------- server side
def serve(proxies: Sequence[Any], params: Mapping[str, Any],
          schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    spec = _spec(*(same_schema(schema, k, NAME) for k in ("kinds", "n_cats", "names")))
    build = _build(spec, bool(same_schema(schema, "time", NAME)), params)
    params_, hist = S.savae_fedavg(list(proxies), spec, get_parameters(build()),
                                   int(params["rounds"]), int(params["local_epochs"]),
                                   int(params["min_samples"]))  # fmt: skip
    return {"parameters": [np.asarray(a) for a in params_], "rounds": _rounds(hist)}


def _rounds(hist: History) -> pd.DataFrame:
    return pd.DataFrame({"round": np.arange(1, len(hist.loss) + 1),
                         "loss": [float(v) for v in hist.loss],
                         "participants": [int(p) for p in hist.participants]})  # fmt: skip


# ---------------------------------------------------------------- the workflow's rule
def _gen(config: Mapping[str, Any]) -> dict[str, Any]:
    return dict(config.get("generative") or {})


def workflow_units(config: Mapping[str, Any], model: str) -> list[str]:
    """The units of rule ``generative_<model>`` (none when the stage or the model is off)."""
    from .workflow import enabled_models, model_units

    gen = _gen(config)
    if not gen.get("enabled", False):
        return []
    return model_units(gen, enabled_models(gen), model)


def _hook(stage: str, model: str, build: Any) -> WorkflowHook:
    """The hook of ``stage`` (the units of rule ``generative_<model>``, its input files)."""
    from .workflow import inputs

    def unit(config: Mapping[str, Any]) -> str:
        return pick(config, stage, workflow_units(config, model))

    def files(config: Mapping[str, Any]) -> dict[str, Any]:
        return dict(inputs(dict(config), model, [unit(config)]))

    def run(config: Mapping[str, Any], files_: Mapping[str, Any]) -> WorkflowRun:
        from .workflow import model_cfg, sources

        cfg = model_cfg(_gen(config), model)
        return build(config, cfg, unit(config), dict(files_), int(config["seed"]),
                     sources(dict(config)))  # fmt: skip

    return WorkflowHook(unit, files, run)


def _savae_run(config, cfg, unit, files, seed, sources) -> WorkflowRun:
    """The good and the poor node of rule ``generative_savae``'s unit (its ``federated`` arm,
    :func:`.experiment.run_savae`'s split and seeds); ``deployment.iterations`` caps the rounds.
    No reference: the workflow's arm writes metrics on held-out rows, not the parameters."""
    from .experiment import load_table
    from .workflow import parse_savae_unit

    ds, rate = parse_savae_unit(unit)
    table = load_table(ds, cfg, files, seed, sources)
    params = params_from_config(cfg, ds, rate, seed)
    params["rounds"] = cap(params["rounds"], config)
    return WorkflowRun(unit, centres(table, cfg, ds, rate, seed), params)


STAGE = register(DeployedStage(NAME, load, save, serve, describe, drops=True, setup=setup,
                               workflow=_hook(NAME, "savae", _savae_run)))  # fmt: skip


# ---------------------------------------------------------------- the DGD
DGD = "dgd"


def dgd_params_from_config(cfg: Mapping[str, Any], unit: str, n_labels: int,
                           seed: int) -> dict[str, Any]:  # fmt: skip
    """The run parameters of DGD unit ``unit`` of the workflow's ``generative`` config;
    ``n_labels``: the reference clusters' count (the mixture's size when ``components`` is
    null), ``seed``: the workflow's seed (the start point)."""
    from dataclasses import asdict

    from .experiment import dgd_prior

    dg = cfg["dgd"]
    return {
        "model": "dgd", "unit": str(unit), "seed": int(seed),
        "prior": asdict(dgd_prior(dg, int(n_labels))),
        "hidden": [int(h) for h in dg["model"]["hidden"]],
        "activation": str(dg["model"]["activation"]), "train": dict(dg["train"]),
        "rounds": int(dg["train"]["rounds"]), "local_epochs": int(dg["train"]["local_epochs"]),
        "min_samples": int(cfg["min_samples"]),
    }  # fmt: skip


def dgd_centres(table: D.Tabular, cfg: Mapping[str, Any], unit: str, seed: int) -> list:
    """The unit's federated DGD centres (their training rows), as :func:`.experiment.run_dgd`
    builds them (CPU)."""
    from .experiment import dgd_centre, dgd_split

    table, parts, _ = dgd_split(table, cfg["dgd"], unit, seed)
    p = dgd_params_from_config(cfg, unit, len(np.unique(table.y)), seed)
    build = _dgd_build(table.spec, p)
    train = dgd.Training.from_config(p["train"])
    return [dgd_centre(cid, table.x[r], table.spec, build, train, seed, unit,
                       p["min_samples"]) for cid, r in parts]  # fmt: skip


def _dgd_build(spec: FeatureSpec, params: Mapping[str, Any]):
    from .experiment import build_dgd

    return functools.partial(build_dgd, spec, dgd.Prior(**params["prior"]),
                             tuple(params["hidden"]), str(params["activation"]),
                             int(params["seed"]), str(params["unit"]), "cpu")  # fmt: skip


def dgd_save(centre: Any, path: Path) -> None:
    s = centre.spec
    save_npz(path, x=centre._x, mask=centre._mask, kinds=np.asarray(s.kinds, dtype=str),
             n_cats=np.asarray(s.n_cats, int), spec_names=np.asarray(s.names, dtype=str),
             cid=centre.cid, seed=int(centre._seed))  # fmt: skip


def dgd_setup(params: Mapping[str, Any]) -> None:
    """Declare the protocols the DGD centre answers under (see :func:`setup`)."""
    ms = int(params["min_samples"])
    P.moments(ms), P.received("generative_standardised", ms), P.dgd_fit(ms)
    P.received("dgd_fit_received", ms)


def dgd_load(path: Path, params: Mapping[str, Any]) -> Any:
    from .centre import DgdCentre

    d = load_npz(path)
    spec = _spec(d["kinds"], d["n_cats"], d["spec_names"])
    return DgdCentre(str(d["cid"]), np.asarray(d["x"], float), d["mask"], spec,
                     _dgd_build(spec, params), dgd.Training.from_config(dict(params["train"])),
                     int(d["seed"]), int(params["min_samples"]))  # fmt: skip


def dgd_describe(centre: Any) -> dict[str, Any]:
    s = centre.spec
    return {"kinds": list(s.kinds), "n_cats": [str(int(c)) for c in s.n_cats],
            "names": list(s.names)}  # fmt: skip


def dgd_serve(proxies: Sequence[Any], params: Mapping[str, Any],
              schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    spec = _spec(*(same_schema(schema, k, DGD) for k in ("kinds", "n_cats", "names")))
    final, hist = S.dgd_fedavg(list(proxies), spec, get_parameters(_dgd_build(spec, params)()),
                               int(params["rounds"]), int(params["local_epochs"]),
                               int(params["min_samples"]))  # fmt: skip
    return {"parameters": [np.asarray(a) for a in final], "rounds": _rounds(hist)}


def _dgd_run(config, cfg, unit, files, seed, sources) -> WorkflowRun:
    """The centres of rule ``generative_dgd``'s unit (:func:`.experiment.run_dgd`'s training
    rows); ``deployment.iterations`` caps the rounds. No reference (the arm's metrics are
    evaluations)."""
    from .experiment import load_table

    ds, rs = cfg["dgd"]["datasets"][unit], cfg["dgd"].get("rnaseq", {})
    kw = {}
    if ds["data"] == "rnaseq":  # as run_dgd_units
        kw = {"cohorts": files["cohorts"], "label": rs["label"], "group": rs["group"],
              "max_genes": rs.get("max_genes")}  # fmt: skip
    table = load_table(ds["data"], cfg, files, seed, sources, **kw)
    from .experiment import dgd_split

    cs = dgd_centres(table, cfg, unit, seed)
    sub = dgd_split(table, cfg["dgd"], unit, seed)[0]  # as dgd_centres: the unit's rows
    params = dgd_params_from_config(cfg, unit, len(np.unique(sub.y)), seed)
    params["rounds"] = cap(params["rounds"], config)
    return WorkflowRun(unit, cs, params)


DGD_STAGE = register(DeployedStage(DGD, dgd_load, dgd_save, dgd_serve, dgd_describe,
                                   drops=True, setup=dgd_setup,
                                   workflow=_hook(DGD, "dgd", _dgd_run)))  # fmt: skip


# ---------------------------------------------------------------- RadialGAN
RADIALGAN = "radialgan"


def radialgan_params_from_config(cfg: Mapping[str, Any], unit: str,
                                 seed: int) -> dict[str, Any]:  # fmt: skip
    """The run parameters of RadialGAN unit ``unit`` (test bed × α rule) of the workflow's
    ``generative`` config; ``seed``: the workflow's seed (the centres' initial weights)."""
    from .experiment import radialgan_arch, radialgan_training

    rg = cfg["radialgan"]
    testbed, rule = unit.rsplit("_", 1)
    arch = radialgan_arch(rg)
    return {
        "model": "radialgan", "unit": str(unit), "testbed": testbed, "alpha": rule,
        "seed": int(seed),
        "arch": {"latent": arch.latent, "hidden": list(arch.hidden),
                 "activation": arch.activation},
        "labels": str(rg["labels"]), "train": radialgan_training(rg),
        "iterations": int(rg["train"]["iterations"]),
        "batch_size": int(rg["train"]["batch_size"]), "min_samples": int(cfg["min_samples"]),
    }  # fmt: skip


def radialgan_centres(table: D.Tabular, cfg: Mapping[str, Any], unit: str,
                      seed: int) -> list[Any]:  # fmt: skip
    """The unit's RadialGAN centres, as :func:`.experiment.run_radialgan` builds them."""
    from .experiment import radialgan_centres as build

    return build(table, dict(cfg), unit, seed)[0]


def radialgan_save(centre: Any, path: Path) -> None:
    """The centre's file: its own rows as given (training / test, NaN = missing; scaled at
    load as in the workflow), its name, its minibatch seed and the policy it carries (the
    site's opt-in to ``radialgan_codes`` / ``radialgan_code_grads``), if any."""
    import json
    from dataclasses import asdict

    own = centre.__dict__.get("disclosure")
    extra = {} if own is None else {"disclosure": json.dumps(asdict(own))}
    x, y, xt, yt = centre.rows
    save_npz(path, x=x, y=y, x_test=xt, y_test=yt, cid=centre.cid, seed=int(centre.seed),
             **extra)  # fmt: skip


def radialgan_setup(params: Mapping[str, Any]) -> None:
    """Declare the protocols the RadialGAN centre answers under (see :func:`setup`)."""
    ms = int(params["min_samples"])
    P.radialgan_codes(ms), P.radialgan_code_grads(ms), P.received("radialgan_applied", ms)
    P.radialgan_evaluation(ms)


def radialgan_load(path: Path, params: Mapping[str, Any]) -> Any:
    import json

    from fedclust.federation.disclosure import policy_from

    from . import radialgan as R
    from .centre import RadialCentre
    from .experiment import build_radialgan

    d = load_npz(path)
    cid, a = str(d["cid"]), params["arch"]
    arch = R.Arch(int(a["latent"]), tuple(int(h) for h in a["hidden"]), str(a["activation"]))
    build = functools.partial(build_radialgan, arch=arch, labels=str(params["labels"]),
                              seed=int(params["seed"]), testbed=str(params["testbed"]),
                              cid=cid)  # fmt: skip
    own = None
    if "disclosure" in d:
        own = policy_from({"default": json.loads(str(d["disclosure"]))})
    return RadialCentre(cid, d["x"], d["y"], d["x_test"], d["y_test"], build,
                        dict(params["train"]), int(d["seed"]), int(params["min_samples"]),
                        own)  # fmt: skip


def radialgan_describe(centre: Any) -> dict[str, Any]:
    # each centre has its own feature set: the server needs no shape (codes are latent)
    return {"features": int(centre.rows[0].shape[1])}


def radialgan_serve(proxies: Sequence[Any], params: Mapping[str, Any],
                    schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """:func:`.server.radialgan` (what :func:`.experiment.run_radialgan` runs in-process).
    Outputs: ``evaluation`` (each centre's AUC without / with the augmented data, as it sent
    them), ``losses`` (Σ_i of the centres' F/G losses per iteration), ``released`` (the centres
    whose codes left them) and ``sizes`` (the counts α came from)."""
    res = S.radialgan(list(proxies), int(params["iterations"]), int(params["batch_size"]),
                      str(params["alpha"]), int(params["min_samples"]))  # fmt: skip
    cols = ["auc_local", "auc_augmented", "virtual", "virtual_positive", "n"]
    ev = pd.DataFrame([{"centre": c, **{k: m[k] for k in cols}}
                       for c, m in sorted(res["evaluation"].items())],
                      columns=["centre", *cols])  # fmt: skip
    losses = pd.DataFrame({"iteration": np.arange(1, len(res["losses"]) + 1),
                           "loss": [float(v) for v in res["losses"]]})  # fmt: skip
    return {"evaluation": ev, "losses": losses, "released": list(res["released"]),
            "sizes": {k: int(v) for k, v in res["sizes"].items()}}  # fmt: skip


def _radialgan_run(config, cfg, unit, files, seed, sources) -> WorkflowRun:
    """The centres of rule ``generative_radialgan``'s unit (its test bed loaded and subsampled
    as :func:`.experiment.run_radialgan_units` does); ``deployment.iterations`` caps the
    iterations. No reference (the arm's evaluation is its own)."""
    from fedclust.seeds import rng

    from .experiment import load_table

    tb = cfg["radialgan"]["testbeds"][unit.rsplit("_", 1)[0]]
    t = load_table(tb["data"], cfg, files, seed, sources, group=tb.get("group", "source"))
    if tb.get("n_samples") and t.n > int(tb["n_samples"]):
        g = rng(seed, "radialgan", unit.rsplit("_", 1)[0], "subset")
        t = t.rows(np.sort(g.permutation(t.n)[: int(tb["n_samples"])]))
    params = radialgan_params_from_config(cfg, unit, seed)
    params["iterations"] = cap(params["iterations"], config)
    cs = radialgan_centres(t, cfg, unit, seed)
    for c in cs:  # a site's name names its folder ("VA Long Beach" → "VA_Long_Beach")
        c.cid = re.sub(r"[^A-Za-z0-9_-]", "_", c.cid)
    return WorkflowRun(unit, cs, params)


RADIALGAN_STAGE = register(DeployedStage(RADIALGAN, radialgan_load, radialgan_save,
                                         radialgan_serve, radialgan_describe,
                                         setup=radialgan_setup,
                                         workflow=_hook(RADIALGAN, "radialgan",
                                                        _radialgan_run)))  # fmt: skip


# ---------------------------------------------------------------- SAVAE's virtual patients
VIRTUAL = "savae_virtual"


def virtual_params_from_config(cfg: Mapping[str, Any], dataset: str, rate: float,
                               seed: int) -> dict[str, Any]:  # fmt: skip
    """The run parameters of the virtual-patients relay of SAVAE unit (``dataset``, ``rate``):
    the unit's SAVAE parameters, ``n_virtual``, the node that supplies them (``good``, its
    isolated generator trained for ``epochs`` = rounds × local epochs at its site) and the
    node that receives them (``poor``)."""
    p = params_from_config(cfg, dataset, rate, seed)
    return {**p, "model": "savae_virtual", "n_virtual": int(cfg["savae"]["n_virtual"]),
            "epochs": int(p["rounds"]) * int(p["local_epochs"]), "good": "good",
            "poor": "poor"}  # fmt: skip


def virtual_setup(params: Mapping[str, Any]) -> None:
    """Declare the protocols of the relay's centres (see :func:`setup`)."""
    ms = int(params["min_samples"])
    P.virtual_patients(ms), P.received("savae_virtual_received", ms)


def virtual_save(centre: SavaeCentre, path: Path) -> None:
    """The SAVAE node's file (as :func:`save`) and the policy it carries (the good site's
    opt-in to ``savae_virtual_patients``), if any."""
    import json
    from dataclasses import asdict

    save(centre, path)
    own = centre.__dict__.get("disclosure")
    if own is not None:
        d = load_npz(path)
        save_npz(path, **d, disclosure=json.dumps(asdict(own)))


def virtual_load(path: Path, params: Mapping[str, Any]) -> SavaeCentre:
    """The SAVAE node of ``path``; the supplying node (``params['good']``) first trains its own
    generator as the isolated good node of the workflow does (its own scaler, ``epochs`` local
    epochs: the site's own computation, no message)."""
    import json

    from fedclust.federation.disclosure import policy_from

    centre = load(path, params)
    d = load_npz(path)
    if "disclosure" in d:
        centre.disclosure = policy_from({"default": json.loads(str(d["disclosure"]))})
    if centre.cid == str(params["good"]):
        centre.standardise_locally()
        centre.train_local(int(params["epochs"]))
    return centre


def virtual_serve(proxies: Sequence[Any], params: Mapping[str, Any],
                  schema: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """:func:`.server.virtual_patients` (what :func:`.experiment.run_savae` runs in-process):
    the good node's virtual patients relayed to the poor node. Outputs: ``n_virtual`` (rows
    relayed; 0: the good node abstained) and ``relayed_sha256``, a digest of the rows the
    server relayed (it holds them as messages; the digest shows a site the rows it got are
    the ones sent, and the rows themselves are not written)."""
    for k in ("kinds", "n_cats", "names"):
        same_schema(schema, k, VIRTUAL)
    digest: list[str] = []
    n = S.virtual_patients(list(proxies), str(params["good"]), str(params["poor"]),
                           int(params["n_virtual"]), int(params["min_samples"]),
                           on_relay=lambda m: digest.append(relay_digest(m)))  # fmt: skip
    return {"n_virtual": int(n), "relayed_sha256": digest[0] if digest else ""}


def _virtual_run(config, cfg, unit, files, seed, sources) -> WorkflowRun:
    """The relay's nodes of rule ``generative_savae``'s unit (as :func:`_savae_run`; the good
    site's opt-in is the job's ``disclosure`` section); ``deployment.iterations`` caps the
    rounds of the good node's own training. No reference."""
    from .workflow import parse_savae_unit

    run = _savae_run(config, cfg, unit, files, seed, sources)
    params = virtual_params_from_config(cfg, *parse_savae_unit(unit), seed)
    params["rounds"] = run.params["rounds"]
    params["epochs"] = int(params["rounds"]) * int(params["local_epochs"])
    return WorkflowRun(unit, run.centres, params)


VIRTUAL_STAGE = register(DeployedStage(VIRTUAL, virtual_load, virtual_save, virtual_serve,
                                       describe, setup=virtual_setup,
                                       workflow=_hook(VIRTUAL, "savae", _virtual_run)))  # fmt: skip


def relay_digest(relay: Mapping[str, Any]) -> str:
    """SHA-256 of a virtual-patients relay (``x``, ``y``, ``t``: shapes and float64 values)."""
    import hashlib

    h = hashlib.sha256()
    for k in ("x", "y", "t"):
        v = relay.get(k)
        a = None if v is None else np.ascontiguousarray(np.asarray(v, np.float64))
        h.update(f"{k}:{'none' if a is None else a.shape}".encode())
        if a is not None:
            h.update(a.tobytes())
    return h.hexdigest()
