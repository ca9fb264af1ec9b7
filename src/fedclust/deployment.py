"""Federated stages that run on a Flower deployment: one registry, filled by the stages.

A deployment has one SuperNode per centre, started at the centre with the centre's own folder
(``--node-config "centre-dir='/data/fedclust'"``), and a server that runs ``flwr run`` with the
generic Flower app ``deploy/flower`` (:mod:`fedclust.flower.deploy`). The app knows no stage: the
run config names one (``stage``) with its parameters (``params``, JSON), and the app looks it up
here. A stage makes itself deployable by registering, in its own package
(``fedclust/<stage>/deployment.py``, listed once in :data:`MODULES`, imported only when the stage
is asked for), a :class:`DeployedStage`:

- ``load(path, params)``: how a centre object is built from the centre's file (and the run's
  parameters: the model the server asks for); ``save(centre, path)``: the inverse, used to set
  up the centres' folders from a workflow split (and by the tests);
- ``describe(centre)``: what the opening handshake tells the server besides the centre's name
  (shapes it needs to build a model: ``{"n_features": 54}``), so no shape is hard-coded;
- ``serve(proxies, params, schema)``: the server function over client proxies (the same code
  :func:`fedclust.federation.federate` runs in-process), returning named outputs — tables
  (``DataFrame`` → CSV), arrays / lists of arrays (→ ``.npz``), JSON-able values;
- ``setup(params)`` (optional): run at the centre before each message is answered, e.g. to
  declare protocols built from the run's parameters (a centre resolves a request's protocol
  by name; a deployment answers every message in a fresh process);
- ``drops``: whether a centre lost mid-run may be dropped when the run sets ``min_available``
  (FedAvg-type protocols; a bool or a function of the run's parameters); otherwise a lost
  centre stops the run naming the site, the round and the protocol;
- ``workflow`` (optional, a :class:`WorkflowHook`): how the workflow's rule ``deployment_run``
  (:mod:`fedclust.deployrun`) builds the stage's centres of the workflow's own split and the
  run parameters from the config and the rule's input files.

:func:`run` runs a registered stage on any transport with the centres built from their files:
in-process it is the reference a deployment's outputs are compared with. The federation core
never imports this module or Flower; :mod:`fedclust.flower` holds no stage code.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedclust.errors import ConfigError, InputDataError
from fedclust.federation import INPROCESS, Ledger, Transport, federate
from fedclust.federation.transport import centre_id

#: stage name → the module that registers it (imported on first use). Another stage plugs in
#: with one line here and a ``deployment.py`` in its package (docs/ARCHITECTURE.md).
MODULES: dict[str, str] = {
    "check": "fedclust.deploycheck",  # the smallest stage: try a set-up, load-test a SuperLink
    "dec": "fedclust.dec.deployment",
    "survival": "fedclust.survival.deployment",
    "survival_km": "fedclust.survival.deployment",  # grid Kaplan–Meier + log-rank (seed 003 §11.2)
    "survival_coxph": "fedclust.survival.deployment",  # exact stratified Cox-PH (seed 003 §7.2)
    "heart": "fedclust.decentral.deployment",
    "admm": "fedclust.admm.deployment",
    "boosting": "fedclust.boosting.deployment",
    "bayes": "fedclust.bayes.deployment",
    "fedprep": "fedclust.data.fedpreprocess.deployment",
    "fedprep_tables": "fedclust.data.fedpreprocess.deployment",  # MDS / heart imputation
    "savae": "fedclust.generative.deployment",  # SAVAE's FedAvg (good node / poor node test)
    "dgd": "fedclust.generative.deployment",  # the Deep Generative Decoder's FedAvg
    "radialgan": "fedclust.generative.deployment",  # codes out, code gradients back (D6.2 ch. 5)
    "savae_virtual": "fedclust.generative.deployment",  # SAVAE virtual patients, good → poor
    "hac": "fedclust.hac.deployment",  # simultaneous sharing (seed 001 §5.1)
    "fedcref": "fedclust.fedcref.deployment",
}
REGISTRY: dict[str, DeployedStage] = {}
NAME = re.compile(r"^[A-Za-z0-9_-]+$")
Outputs = dict[str, Any]


@dataclass
class WorkflowRun:
    """One deployable unit of the workflow: ``unit`` (its id, e.g. the ADMM task), the centre
    objects of the workflow's split (each holding only its rows), the run parameters and
    ``reference`` (optional): outputs of the workflow's own in-process function on the same
    centres, which the deployed outputs must equal too (what ties the files to the workflow)."""

    unit: str
    centres: list[Any]
    params: dict[str, Any]
    reference: Outputs | None = None


@dataclass(frozen=True)
class WorkflowHook:
    """A stage's hook for the workflow's deployment rule (issue 30 B.1), all from the workflow
    config (filled with the schema's defaults):

    - ``unit(config) -> str``: the unit deployed (``deployment.units.<stage>``, else the stage's
      first), checked at config time (a :class:`ConfigError` naming the choices);
    - ``inputs(config) -> dict``: the rule's input files (parse time: nothing heavy);
    - ``build(config, inputs) -> WorkflowRun``: the centres, parameters and reference
      (``deployment.iterations`` caps the rounds where a stage has them).
    """

    unit: Callable[[Mapping[str, Any]], str]
    inputs: Callable[[Mapping[str, Any]], dict[str, str]]
    build: Callable[[Mapping[str, Any], Mapping[str, str]], WorkflowRun]


def chosen_unit(config: Mapping[str, Any], stage: str) -> str | None:
    """``deployment.units.<stage>`` (None: the stage's first unit)."""
    units = config.get("deployment", {}).get("units") or {}
    value = units.get(stage)
    return None if value is None else str(value)


def pick(config: Mapping[str, Any], stage: str, choices: Sequence[str]) -> str:
    """The unit of ``stage`` deployed: ``deployment.units.<stage>`` if one of ``choices``, the
    first choice when unset; a :class:`ConfigError` naming the choices otherwise."""
    want = chosen_unit(config, stage)
    if not choices:
        raise ConfigError(f"the workflow config has no {stage} unit to deploy",
                          where=f"deployment.units.{stage}",
                          fix=f"configure the {stage} stage, or drop {stage} from "
                          "deployment.stages")  # fmt: skip
    if want is None:
        return str(choices[0])
    if want not in choices:
        raise ConfigError(f"deployment.units.{stage} {want!r} is not a unit of the config",
                          where=f"deployment.units.{stage}",
                          fix=f"one of {list(choices)} (or leave it out: the first)")  # fmt: skip
    return want


def iterations(config: Mapping[str, Any]) -> int | None:
    """``deployment.iterations``: a cap on the deployed run's rounds (None: the stage's own)."""
    value = config.get("deployment", {}).get("iterations")
    return None if value is None else int(value)


def cap(value: int, config: Mapping[str, Any]) -> int:
    """``value`` rounds, at most ``deployment.iterations``."""
    n = iterations(config)
    return int(value) if n is None else min(int(value), n)


@dataclass(frozen=True)
class DeployedStage:
    """A federated stage as a deployment runs it (see the module docstring)."""

    name: str
    load: Callable[[Path, Mapping[str, Any]], Any]
    save: Callable[[Any, Path], None]
    serve: Callable[[list, Mapping[str, Any], Mapping[str, Mapping[str, Any]]], Outputs]
    describe: Callable[[Any], dict[str, Any]] = lambda centre: {}
    drops: bool | Callable[[Mapping[str, Any]], bool] = False
    setup: Callable[[Mapping[str, Any]], None] | None = None
    workflow: WorkflowHook | None = None

    def allows_drops(self, params: Mapping[str, Any]) -> bool:
        """Whether this run (its parameters) may go on without a lost centre."""
        return bool(self.drops(params) if callable(self.drops) else self.drops)

    @property
    def filename(self) -> str:
        """The stage's file in a centre's folder."""
        return f"{self.name}.npz"


def register(stage: DeployedStage) -> DeployedStage:
    """Make ``stage`` deployable (called by the stage's own ``deployment`` module)."""
    if not NAME.match(stage.name):
        raise ValueError(f"stage name {stage.name!r} must match {NAME.pattern}")
    REGISTRY[stage.name] = stage
    return stage


def get(name: str) -> DeployedStage:
    """The registered stage ``name``, importing its module on first use."""
    if name not in REGISTRY and name in MODULES:
        importlib.import_module(MODULES[name])
    if name not in REGISTRY:
        raise ConfigError(f"no deployable stage {name!r}", where="stage (Flower run config)",
                          fix=f"one of {sorted(MODULES)}")  # fmt: skip
    return REGISTRY[name]


# ---------------------------------------------------------------- centre folders
def centre_file(stage: DeployedStage, centre_dir: str | Path) -> Path:
    """``<centre-dir>/<stage>.npz``: the only file of the centre the stage opens."""
    path = Path(centre_dir).expanduser() / stage.filename
    if not path.is_file():
        raise InputDataError(
            f"the centre has no file for stage {stage.name!r}",
            where=str(path),
            fix=f"write it with fedclust.deployment.write_centres(get({stage.name!r}), ...) at "
            "the centre, or start the SuperNode with the centre's folder as centre-dir",
        )
    return path


def write_centres(stage: DeployedStage, centres: Sequence[Any], root: str | Path,
                  folders: Sequence[str | Path] | None = None) -> list[Path]:  # fmt: skip
    """One folder per centre, ``<root>/<cid>/<stage>.npz`` (or ``folders[i]`` for centre i: one
    site's folder holds its files of several stages), each with that centre's data only (a
    workflow split set up as sites; a real site writes its own). Returns the folders."""
    if folders is not None and len(folders) != len(centres):
        raise ValueError(f"{len(folders)} folders for {len(centres)} centres")
    out = []
    for i, c in enumerate(centres):
        cid = centre_id(c)
        if not NAME.match(cid):
            raise ConfigError(f"centre id {cid!r} cannot name a folder", where="centre ids",
                              fix=f"ids matching {NAME.pattern}")  # fmt: skip
        folder = Path(folders[i]) if folders is not None else Path(root) / cid
        folder.mkdir(parents=True, exist_ok=True)
        stage.save(c, folder / stage.filename)
        out.append(folder)
    return out


def load_centre(stage: DeployedStage, centre_dir: str | Path, params: Mapping[str, Any],
                disclosure: str | Path | None = None) -> Any:  # fmt: skip
    """The centre object of ``centre_dir`` for ``stage``; ``disclosure``: the site's own YAML
    file with its ``disclosure`` settings (DataSHIELD's ``nfilter_*``), never the server's.
    A centre file that lacks a field of the stage raises :class:`InputDataError` naming the
    file (:class:`CentreFile`); a disclosure file may raise the floors the centre file
    carries, never lower them (issue 30 C)."""
    if stage.setup is not None:
        stage.setup(params)
    path = centre_file(stage, centre_dir)
    centre = stage.load(path, params)
    cid = centre_id(centre)
    if not NAME.match(cid):
        raise InputDataError(f"centre id {cid!r} in the centre file cannot name a site",
                             where=str(path), fix=f"an id matching {NAME.pattern}")  # fmt: skip
    if disclosure:
        from fedclust.federation.disclosure import lowered, policy_from

        section = _site_policy_section(Path(disclosure).expanduser())
        try:
            policy = policy_from(section, cid)
        except ConfigError as err:
            raise ConfigError(err.what, where=f"{disclosure} ({err.where})", fix=err.fix) from None
        own = centre.__dict__.get("disclosure")
        looser = lowered(own, policy) if own is not None else []
        if looser:
            raise ConfigError(
                f"the site's disclosure file would loosen the centre file's own policy: "
                f"{', '.join(looser)}",
                where=f"{disclosure} (centre {cid}, {path})",
                fix="a disclosure file may only raise floors: set each at least as strict as the "
                "centre file's (or rewrite the centre file from the site's config)",
            )
        centre.disclosure = policy
    return centre


def _site_policy_section(path: Path) -> Mapping[str, Any]:
    """The ``disclosure`` mapping of a site's YAML file (``default`` / ``centres``)."""
    import yaml

    fix = "a YAML file: `disclosure: {default: {nfilter_tab: 5, nfilter_subset: 5}}`"
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        why = type(err).__name__ if not isinstance(err, OSError) else (err.strerror or str(err))
        raise ConfigError(f"the site's disclosure file cannot be read ({why})", where=str(path),
                          fix=fix) from None  # fmt: skip
    section = doc.get("disclosure", doc) if isinstance(doc, Mapping) else None
    if not isinstance(section, Mapping):
        raise ConfigError("the site's disclosure file is not a mapping", where=str(path), fix=fix)
    extra = sorted(set(map(str, section)) - {"default", "centres"})
    if extra:
        raise ConfigError(
            f"the site's disclosure file sets {extra} outside `default:` / `centres:` (read as "
            "no setting: the default floors)",
            where=str(path),
            fix=fix,
        )
    return section


def save_npz(path: Path, **arrays: Any) -> None:
    """A centre file: plain numeric / string arrays (read back with ``allow_pickle=False``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        np.savez(fh, **{k: np.asarray(v) for k, v in arrays.items()})


class CentreFile(dict):
    """A centre file's arrays by name; a field it lacks raises :class:`InputDataError` naming
    the file (another stage's file, or one written by another version), not a KeyError."""

    def __init__(self, path: Path, arrays: Mapping[str, np.ndarray]) -> None:
        super().__init__(arrays)
        self.path = path

    def __missing__(self, key: str) -> Any:
        raise InputDataError(
            f"the centre file has no field {key!r} (fields: {', '.join(sorted(self)) or 'none'}): "
            "another stage's file, or one written by another version",
            where=str(self.path),
            fix="rewrite it with fedclust.deployment.write_centres(get(<stage>), ...) at the "
            "centre; a folder holds <stage>.npz per stage",
        )


def file_policy(d: Mapping[str, np.ndarray]) -> Any:
    """The site's disclosure policy a centre file carries (field ``disclosure``, JSON), or None
    (the configured one); an invalid one raises InputDataError naming the file."""
    if "disclosure" not in d:
        return None
    from fedclust.federation.disclosure import policy_from

    try:
        return policy_from({"default": json.loads(str(d["disclosure"]))})
    except (json.JSONDecodeError, ConfigError, AttributeError) as err:
        raise InputDataError(
            f"the centre file's disclosure policy is not valid ({err})".replace("\n", "; "),
            where=str(getattr(d, "path", "centre file")),
            fix="rewrite the centre file from the site's config",
        ) from None


def load_npz(path: Path) -> dict[str, np.ndarray]:
    """A centre file's arrays; a truncated, empty or foreign file raises InputDataError."""
    import zipfile

    try:
        with np.load(path, allow_pickle=False) as z:
            return CentreFile(Path(path), {k: z[k] for k in z.files})
    except (zipfile.BadZipFile, EOFError, ValueError, OSError) as err:
        raise InputDataError(
            f"the centre file cannot be read ({type(err).__name__}: {err}): truncated, or not "
            "a centre file",
            where=str(path),
            fix="rewrite it with fedclust.deployment.write_centres at the centre",
        ) from None


# ---------------------------------------------------------------- running a stage
def run(
    stage: DeployedStage | str, centre_dirs: Sequence[str | Path], params: Mapping[str, Any],
    transport: Transport = INPROCESS, ledger: Ledger | None = None,
) -> Outputs:  # fmt: skip
    """``stage`` with the centres built from their folders, over ``transport`` (in-process: the
    reference of a deployment). Centres are ordered by id, as the deployment's ServerApp does."""
    stage = get(stage) if isinstance(stage, str) else stage
    centres = sorted((load_centre(stage, d, params) for d in centre_dirs), key=centre_id)
    schema = {centre_id(c): stage.describe(c) for c in centres}
    ledger = ledger if ledger is not None else Ledger()
    outputs = federate(centres, lambda ps: stage.serve(ps, params, schema), ledger=ledger,
                       transport=transport)  # fmt: skip
    return {**outputs, "ledger": ledger.table()}


def same_schema(schema: Mapping[str, Mapping[str, Any]], key: str, stage: str) -> Any:
    """The value every centre's handshake gave for ``key`` (fail fast, naming the centres,
    when they disagree: e.g. centre files with different feature counts)."""
    values = {cid: s.get(key) for cid, s in schema.items()}
    if len(set(map(str, values.values()))) != 1:
        raise InputDataError(f"the centres disagree on {key}: {values}",
                             where=f"stage {stage!r}, the centres' files",
                             fix="give every centre a file with the same columns")  # fmt: skip
    return next(iter(values.values()))


# ---------------------------------------------------------------- outputs
def write_outputs(out_dir: str | Path, outputs: Mapping[str, Any]) -> None:
    """Tables → ``<name>.csv``, arrays / lists of arrays → ``<name>.npz``, the rest → JSON."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rest = {}
    for name, value in outputs.items():
        if not NAME.match(name):
            raise ValueError(f"output name {name!r} must match {NAME.pattern}")
        if isinstance(value, pd.DataFrame):
            value.to_csv(out / f"{name}.csv", index=False)
        elif isinstance(value, np.ndarray):
            np.savez(out / f"{name}.npz", value)
        elif (
            isinstance(value, list | tuple)
            and value
            and all(isinstance(a, np.ndarray) for a in value)
        ):
            np.savez(out / f"{name}.npz", *value)
        else:
            rest[name] = value
    (out / "values.json").write_text(json.dumps(rest, indent=1, sort_keys=True, default=float))


def read_outputs(out_dir: str | Path) -> Outputs:
    """What :func:`write_outputs` wrote (tables as DataFrames, arrays as lists of arrays)."""
    out = Path(out_dir)
    res: Outputs = json.loads((out / "values.json").read_text())
    for f in sorted(out.glob("*.csv")):
        res[f.stem] = pd.read_csv(f)
    for f in sorted(out.glob("*.npz")):
        with np.load(f, allow_pickle=False) as z:
            res[f.stem] = [z[f"arr_{i}"] for i in range(len(z.files))]
    return res
