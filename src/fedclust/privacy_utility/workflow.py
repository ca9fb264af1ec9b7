"""Parse-time helpers for ``rules/privacy_utility.smk``: the methods and each one's input files
(the data stage's and the survival stage's contract paths). No heavy imports."""

from __future__ import annotations

from typing import Any

from fedclust.errors import ConfigError

METHODS = ("dp_lloyd", "hac", "km", "known_io", "survival", "heart", "dec", "admm", "boosting",
           "generative", "fedprep")  # fmt: skip
METHODS += ("fedcref", "bayes", "property_inference", "reconstruction")
#: what every method writes under results/privacy_utility/{method}/
UNIT_FILES = ("curve", "budget")


def methods(cfg: dict[str, Any]) -> list[str]:
    out = [str(m) for m in cfg.get("methods", [])]
    bad = sorted(set(out) - set(METHODS))
    if bad:
        raise ConfigError(
            f"unknown privacy–utility method(s) {bad}",
            where="privacy_utility.methods",
            fix=f"use {list(METHODS)}",
        )
    return out


def fanout(cfg: dict[str, Any]) -> str:
    """``method``: one ``privacy_utility_run`` job per method (thesis: a cluster runs them in
    parallel); ``all``: one job running every method in one process (small configs: saves the
    interpreter / torch start-up of six jobs). Same numbers either way (seeds per method)."""
    out = str(cfg.get("fanout", "all"))
    if out not in ("method", "all"):
        raise ConfigError(
            f"privacy_utility.fanout is {out!r}",
            where="privacy_utility.fanout",
            fix="use method or all",
        )
    return out


def job_methods(cfg: dict[str, Any], wildcards: Any) -> list[str]:
    """The methods one ``privacy_utility_run`` job runs: all (fanout ``all``) or ``{method}``."""
    return methods(cfg) if fanout(cfg) == "all" else [str(wildcards.method)]


def job_inputs(cfg: dict[str, Any], wildcards: Any) -> dict[str, str]:
    """The named inputs of one job: ``<method>_<name>`` for each of its methods."""
    return {f"{m}_{k}": v for m in job_methods(cfg, wildcards) for k, v in inputs(m, cfg).items()}


def unit_outputs(grouped: list[str] | None) -> dict[str, str]:
    """Outputs of one job: ``<file>_<method>`` per method of a grouped job, else ``<file>``
    under the ``{method}`` wildcard."""
    if grouped is None:
        return {f: f"results/privacy_utility/{{method}}/{f}.tsv" for f in UNIT_FILES}
    return {f"{f}_{m}": f"results/privacy_utility/{m}/{f}.tsv" for m in grouped for f in UNIT_FILES}


def inputs(method: str, cfg: dict[str, Any]) -> dict[str, str]:
    """The named input files of one method's job."""
    m = cfg.get(method, {})
    if method in ("admm", "boosting", "generative"):  # bundled / simulated in the job
        return {}
    if method in ("fedcref", "bayes"):  # bundled images (digits; no downloaded file)
        return {}
    if method in ("dp_lloyd", "km", "dec"):
        return {
            "features": "results/data/mds/features.parquet",
            "obs": "results/data/mds/obs.tsv",
            "split": f"results/data/mds/splits/{m.get('split', 'uniform10')}.tsv",
        }
    if method in ("hac", "known_io"):
        c, p = m.get("cohort", "SIMA"), m.get("preprocessing", "vst")
        return {
            "features": f"results/data/rnaseq/{c}/{p}.parquet",
            "obs": f"results/data/rnaseq/{c}/obs.tsv",
        }
    if method in ("property_inference", "reconstruction"):  # raw counts (each side preprocesses)
        c = m.get("cohort", "COAD")
        return {
            "features": f"results/data/rnaseq/{c}/counts.parquet",
            "obs": f"results/data/rnaseq/{c}/obs.tsv",
        }
    if method == "survival":
        return {
            "features": "results/survival/cohort/covariates.parquet",
            "obs": "results/survival/cohort/outcomes.tsv",
        }
    if method == "fedprep":  # the cohort's raw counts and its centre split
        c = m.get("cohort", "SIMA")
        return {
            "features": f"results/data/rnaseq/{c}/counts.parquet",
            "obs": f"results/data/rnaseq/{c}/obs.tsv",
            "split": f"results/data/rnaseq/{c}/splits/{m.get('split', 'region')}.tsv",
        }
    if method == "heart":
        return {
            "features": "results/data/heart/features.parquet",
            "obs": "results/data/heart/obs.tsv",
        }
    raise ConfigError(
        f"unknown privacy–utility method {method!r}",
        where="privacy_utility.methods",
        fix=f"use {list(METHODS)}",
    )


#: the glyph sources FedCRef's privacy–utility run reads offline
OFFLINE = ("digits", "mlxtend5k", "synthetic")
#: methods on the MDS features (their ``split`` is a data.splits entry of mds)
MDS_METHODS = ("dp_lloyd", "km", "dec")
#: methods on an RNA-seq cohort (``cohort``: one of data.rnaseq.cohorts)
RNASEQ_METHODS = ("hac", "known_io", "fedprep", "property_inference", "reconstruction")


def check_config(config: dict[str, Any], where: str = "config") -> None:
    """Config-time checks of an enabled stage (issue 30 C, items 3 and 12): at least one method;
    every split, cohort, dataset and method a method names exists where it must (before: a
    MissingInputException, or a ConfigError / KeyError in the job); no floor below the
    centres' own (the federated preprocessing's ``data.federated.min_samples``, the disclosure
    ``nfilter_subset`` for HAC's ``n_min``)."""
    cfg = config.get("privacy_utility") or {}
    if not cfg.get("enabled", False):
        return
    names = methods(cfg)
    if not names:
        raise ConfigError("privacy_utility is enabled with no methods",
                          where=f"{where}: privacy_utility.methods",
                          fix=f"list some of {list(METHODS)}, or enabled: false")  # fmt: skip
    data = config.get("data", {})
    splits, cohorts = data.get("splits", {}), list(data.get("rnaseq", {}).get("cohorts", []))
    for m in names:
        sub, key = cfg.get(m) or {}, f"{where}: privacy_utility.{m}"
        if m in MDS_METHODS or m == "fedprep":
            dataset = "mds" if m in MDS_METHODS else "rnaseq"
            split = sub.get("split")
            applies = (splits.get(split) or {}).get("datasets", [])
            if split not in splits or dataset not in applies:
                ok = [s for s, spec in splits.items() if dataset in spec.get("datasets", [])]
                raise ConfigError(
                    f"privacy_utility.{m}.split {split!r} is not a split of {dataset} in "
                    "data.splits",
                    where=f"{key}.split",
                    fix=f"one of {ok} (or add it to data.splits with datasets: [{dataset}])",
                )
        if m in RNASEQ_METHODS and sub.get("cohort") not in cohorts:
            raise ConfigError(
                f"privacy_utility.{m}.cohort {sub.get('cohort')!r} is not one of "
                f"data.rnaseq.cohorts {cohorts}",
                where=f"{key}.cohort",
                fix="name a cohort of data.rnaseq.cohorts (or add it there)",
            )
    if "admm" in names:
        from fedclust.admm.workflow import check_target

        check_target(str(cfg["admm"].get("problem")), str(cfg["admm"].get("dataset")),
                     "privacy_utility.admm")  # fmt: skip
    if "known_io" in names:
        _check_known_io(data, cfg["known_io"], where)
    if "fedcref" in names:
        _check_fedcref(config, cfg["fedcref"], where)
    if "bayes" in names:
        _check_bayes(config, cfg["bayes"], where)
    _check_floors(config, cfg, names, where)


def _check_fedcref(config: dict[str, Any], m: dict[str, Any], where: str) -> None:
    offline = OFFLINE
    ds = str(m.get("dataset"))
    spec = (config.get("fedcref") or {}).get("datasets", {}).get(ds)
    spec = spec or ({"source": ds} if ds in offline else None)
    if spec is None or spec.get("source") not in offline:
        raise ConfigError(
            f"privacy_utility.fedcref.dataset {ds!r} is not an offline glyph dataset",
            where=f"{where}: privacy_utility.fedcref.dataset",
            fix=f"one of {offline}, or a fedcref.datasets entry whose source is one of them",
        )


def _check_bayes(config: dict[str, Any], m: dict[str, Any], where: str) -> None:
    from fedclust.config import defaults_at

    fed = defaults_at(config.get("bayes") or {}, ["bayes"]).get("federated", {})
    meths, splits = fed.get("methods", {}), fed.get("splits", {})
    pvi = sorted(k for k, v in meths.items() if (v or {}).get("algorithm") == "pvi")
    if m.get("method") not in pvi:
        raise ConfigError(
            f"privacy_utility.bayes.method {m.get('method')!r} is not a PVI method of "
            "bayes.federated.methods",
            where=f"{where}: privacy_utility.bayes.method",
            fix=f"one of {pvi}",
        )
    import jsonschema

    from fedclust.config import _schema

    local = _schema()["properties"]["bayes"]["properties"]["federated"]["properties"]["local"]
    err = jsonschema.validators.validator_for(local)(local).iter_errors(m.get("local") or {})
    err = next(iter(sorted(err, key=lambda e: list(e.absolute_path))), None)
    if err is not None:
        at = ".".join(map(str, err.absolute_path))
        raise ConfigError(f"privacy_utility.bayes.local.{at}: {err.message}",
                          where=f"{where}: privacy_utility.bayes.local",
                          fix="the keys and values of bayes.federated.local")  # fmt: skip
    if m.get("split") not in splits:
        raise ConfigError(
            f"privacy_utility.bayes.split {m.get('split')!r} is not one of bayes.federated.splits",
            where=f"{where}: privacy_utility.bayes.split",
            fix=f"one of {sorted(splits)}",
        )


def _check_floors(config: dict[str, Any], cfg: dict[str, Any], names: list[str], where: str):
    from fedclust.federation.disclosure import policy_for

    if "fedprep" in names:
        ms = int(cfg["fedprep"].get("min_samples", 3))
        floor = int((config.get("data", {}).get("federated") or {}).get("min_samples", 3))
        if ms < floor:
            raise ConfigError(
                f"privacy_utility.fedprep.min_samples = {ms} is below the federated "
                f"preprocessing's floor data.federated.min_samples = {floor}: the measured run "
                "would use a floor the data stage never does",
                where=f"{where}: privacy_utility.fedprep.min_samples",
                fix=f"set it to {floor} or more (a floor is never lowered)",
            )
    if "hac" in names:
        n_min = int(cfg["hac"].get("n_min", 10))
        sub = (config.get("disclosure") or {}).get("centres") or {}
        floor = max([policy_for(config).nfilter_subset]
                    + [policy_for(config, c).nfilter_subset for c in sub])  # fmt: skip
        if n_min < floor:
            raise ConfigError(
                f"privacy_utility.hac.n_min = {n_min} is below the centres' floor "
                f"nfilter_subset = {floor}: a released cluster summarises at least that many "
                "samples, so the run would not use the n_min it reports",
                where=f"{where}: privacy_utility.hac.n_min",
                fix=f"set n_min to {floor} or more",
            )


def _check_known_io(data: dict[str, Any], m: dict[str, Any], where: str) -> None:
    """A simulated cohort's size is known at config time: enough known rows for the genes."""
    rna = data.get("rnaseq", {})
    if rna.get("source", "simulated") != "simulated":
        return  # real cohorts: checked by the job (experiment.check_known_rows)
    sim = {**(rna.get("simulate") or {}),
           **((rna.get("simulate_cohorts") or {}).get(m.get("cohort")) or {})}  # fmt: skip
    d = min(int(m.get("genes", 50)), int(sim.get("n_genes", 10**9)),
            int(rna.get("top_genes") or 10**9))  # fmt: skip
    if "n_samples" in sim:
        check_known_rows(int(sim["n_samples"]), d, float(m.get("fraction", 0.3)),
                         f"{where}: simulated cohort {m.get('cohort')}")  # fmt: skip


def check_known_rows(n: int, d: int, fraction: float, what: str) -> None:
    """The attacker's Procrustes fit needs at least as many known rows as genes (else Q̂ is
    underdetermined and the attack looks weaker than it is), and rows left to reconstruct."""
    k = int(round(fraction * n))
    if k < d or k >= n:
        raise ConfigError(
            f"known_io: the attacker knows {k} of {n} rows ({fraction:g}) for {d} genes: "
            + ("fewer known rows than genes (the Procrustes fit is underdetermined)" if k < d
               else "no row is left to reconstruct"),
            where=f"privacy_utility.known_io (fraction, genes; {what})",
            fix=f"choose fraction and genes with genes ≤ fraction × {n} < {n}",
        )  # fmt: skip
