"""Helpers for rules/fedcref.smk (kept out of the rule file): settings, runs, input files."""

from __future__ import annotations

from typing import Any

from fedclust.data.glyphs import FILES

from .settings import settings


def plan(cfg: dict) -> tuple[dict, list[tuple[str, str, int]], list[str], bool]:
    """(settings, runs (exp, setting, rep), datasets used, calibration needed?) for a fedcref
    config: θ is calibrated, or a setting runs the side variant ``fedcref_calibrated``."""
    if not cfg:
        return {}, [], [], False
    st = settings(cfg)
    runs = [(e, s, r) for e, ss in st.items() for s in ss for r in range(int(cfg["repetitions"]))]
    datasets = sorted({o["dataset"] for ss in st.values() for o in ss.values()})
    side = any(
        "fedcref_calibrated" in o.get("variants", cfg["variants"])
        for ss in st.values()
        for o in ss.values()
    )
    return st, runs, datasets, str(cfg["association"]["theta"]) == "calibrated" or side


def calibration_levels(cfg: dict, st: dict, dataset: str) -> list[float]:
    """The initial dirtiness levels the settings on ``dataset`` are calibrated at."""
    from .settings import level_of

    return sorted({level_of(o, cfg) for ss in st.values() for o in ss.values()
                   if o["dataset"] == dataset})  # fmt: skip


def size_study(cfg: dict) -> str | None:
    """The dataset of the θ-vs-S study (``fedcref.size_study``), None when it is off."""
    s = (cfg or {}).get("size_study") or {}
    return str(s["dataset"]) if s.get("enabled") else None


def fanout(cfg: dict) -> str:
    """``unit`` (one fedcref_run job per (exp, setting, rep)) or ``repetition`` (one job per rep
    running every (exp, setting); issue 15). Numbers do not depend on it."""
    return str(cfg.get("fanout", "unit")) if cfg else "unit"


def unit_pairs(st: dict) -> list[tuple[str, str]]:
    """(experiment, setting) of every run of one repetition, in :func:`plan` order."""
    return [(e, s) for e, ss in st.items() for s in ss]


def group_inputs(st: dict, calibrated: bool) -> dict[str, list[str]]:
    """Union of :func:`run_inputs` over every (experiment, setting): a grouped job's inputs."""
    out: dict[str, list[str]] = {}
    for e, s in unit_pairs(st):
        for k, v in run_inputs(st, calibrated, e, s).items():
            if v not in out.setdefault(k, []):
                out[k].append(v)
    return out


def job_inputs(st: dict, calibrated: bool, units: list | None, w: Any) -> dict[str, Any]:
    """Inputs of one fedcref_run job: its run's files, or (grouped, ``units`` given) the union."""
    if units is not None:
        return group_inputs(st, calibrated)
    return run_inputs(st, calibrated, w.exp, w.setting)


def dataset_files(cfg: dict, download_dir: str, dataset: str) -> list[str]:
    """Downloaded upstream files a glyph dataset needs (none for offline sources)."""
    src = cfg["datasets"][dataset]["source"]
    if src not in FILES:
        return []
    reg, names = FILES[src]
    return [f"{download_dir}/{reg}/{n}" for n in names]


def run_inputs(st: dict, calibrated: bool, exp: str, setting: str) -> dict[str, Any]:
    ds = st[exp][setting]["dataset"]
    out = {"data": f"results/fedcref/data/{ds}.npz"}
    if calibrated:
        out["calibration"] = f"results/fedcref/calibration/{ds}.json"
    return out


#: classes of each glyph source (synthetic: its ``n_classes``; Kuzushiji-49: at most 49, those
#: with ≥ ``min_count`` samples are kept)
SOURCE_CLASSES = {"digits": 10, "mlxtend5k": 10, "emnist_digits": 10, "kmnist": 10}


def check_config(config: dict[str, Any], where: str = "config") -> None:
    """Config-time checks of the fedcref stage (:func:`fedclust.config.check_references`): the
    experiments name datasets of ``fedcref.datasets`` (:func:`.settings.settings`) and every
    setting's client system fits its dataset's classes (K_i range, issue 30 item 12)."""
    from fedclust.errors import ConfigError

    from .system import check_system_params

    cfg = config.get("fedcref", {})
    if not cfg.get("enabled", False):
        return
    for exp, ss in settings(cfg).items():
        for name, setting in ss.items():
            spec = cfg["datasets"][setting["dataset"]]
            source = spec.get("source")
            n_classes = (
                int(spec.get("n_classes", 10))
                if source == "synthetic"
                else SOURCE_CLASSES.get(source)
            )
            if n_classes is None:  # kmnist49: the classes kept depend on the data
                continue
            sysc = {**cfg.get("system", {}), **(spec.get("system") or {})}
            k_max = sysc.get("k_max")
            try:
                check_system_params(
                    int(setting.get("n_clients", sysc.get("n_clients", 2))),
                    int(sysc.get("k_min", 2)),
                    n_classes // 2 if k_max is None else int(k_max),
                    n_classes,
                    int(sysc.get("samples_per_class", 1)),
                )
            except ConfigError as err:
                raise ConfigError(
                    f"fedcref dataset {setting['dataset']!r} ({exp} setting {name}): {err.what}",
                    where=f"{where}: {err.where}",
                    fix=err.fix,
                ) from None
