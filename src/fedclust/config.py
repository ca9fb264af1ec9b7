"""Config loading and validation with messages that name the key and the allowed values.

The Snakefile calls :func:`validate_config` at start; the same function is unit-tested.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import errno
import functools
import os
import re
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .errors import ConfigError

NAME_RE = re.compile(r"^[A-Za-z0-9_-]+$")  # config names that become file/folder names


def _find_schema() -> Path:
    """The schema shipped in the package (``fedclust/schema.yaml``: in a checkout a symlink to
    ``config/schema.yaml``, the source of truth; in a wheel a copy), else the checkout's file."""
    packaged = Path(str(resources.files("fedclust") / "schema.yaml"))
    if packaged.is_file():
        return packaged
    return Path(__file__).resolve().parents[2] / "config" / "schema.yaml"


SCHEMA = _find_schema()


class _StrictLoader(yaml.SafeLoader):
    """A safe loader that rejects duplicate mapping keys (YAML's "last one wins" hides typos)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False):
    loader.flatten_mapping(node)
    seen: dict[Any, yaml.Mark] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            first = seen.get(key)
        except TypeError:  # unhashable key: let the base class raise its error
            break
        if first is not None:
            m = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first defined on line {first.line + 1})", m
            )
        seen[key] = key_node.start_mark
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


#: largest config file read (issue 30 item 13): a real config is a few kB; a huge YAML would
#: take minutes and gigabytes to parse and validate
MAX_CONFIG_BYTES = 1_000_000


def _open_config(path: str | os.PathLike) -> str:
    """The text of a config file, or :class:`ConfigError` naming the file: missing, a folder, a
    symlink loop, unreadable, larger than :data:`MAX_CONFIG_BYTES`, not UTF-8 (items 8, 9, 13)."""
    where = str(path)
    fix = "pass a YAML config file (UTF-8 text), e.g. config/config.yaml"
    try:
        size = os.stat(path).st_size
        if os.path.isdir(path):
            raise ConfigError("the config path is a folder, not a file", where=where, fix=fix)
        if size > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"the config file has {size:,} bytes, more than the {MAX_CONFIG_BYTES:,} a "
                "config may have (a real one has a few kB)",
                where=where,
                fix="pass the config file itself, not a data file; split out what is not config",
            )
        with open(path, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError("config file not found", where=where, fix=fix) from None
    except OSError as err:
        loop = err.errno == errno.ELOOP
        what = "the config path is a symlink loop" if loop else f"cannot read the config ({err})"
        raise ConfigError(what, where=where, fix=fix) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ConfigError(
            f"the config file is not UTF-8 text (byte {raw[err.start]:#04x} on line {line}: a "
            "binary file, or text saved in another encoding such as Latin-1)",
            where=where,
            fix="save it as UTF-8 text (YAML), or pass the right file",
        ) from None


def load_yaml(path: str | os.PathLike) -> dict[str, Any]:
    """Read a YAML config file: a mapping of keys. A syntax error or a duplicate key raises
    :class:`ConfigError` naming the file, line and column; so do a missing file, a folder, a
    symlink loop, a non-UTF-8 or oversized file and a document that is not a mapping."""
    text = _open_config(path)
    data = _parse_yaml(text, path)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"a config file must be a mapping of keys (key: value lines), this one is a "
            f"{type(data).__name__}",
            where=str(path),
            fix="write the config as `key: value` lines (see config/config.yaml)",
        )
    return data


def _parse_yaml(text: str, path: str | os.PathLike) -> Any:
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        what = " ".join(x for x in (err.context, err.problem) if x)
        raise ConfigError(
            f"invalid YAML: {what}",
            where=where,
            fix="fix the line shown (indentation, a missing ':' or quote, a repeated key)",
        ) from None
    except yaml.YAMLError as err:
        raise ConfigError(f"invalid YAML: {err}", where=str(path)) from None


def _schema_at(schema: dict[str, Any], path: list[Any]) -> dict[str, Any]:
    node = schema
    for key in path:
        props = node.get("properties", {})
        if isinstance(key, str) and key in props:
            node = props[key]
        elif "additionalProperties" in node and isinstance(node["additionalProperties"], dict):
            node = node["additionalProperties"]
        elif "items" in node:
            node = node["items"]
        else:
            return {}
    return node


def _describe(err: jsonschema.ValidationError, schema: dict[str, Any], source: str) -> ConfigError:
    key = ".".join(str(p) for p in err.absolute_path) or "<top level>"
    if err.validator == "additionalProperties":
        node = _schema_at(schema, list(err.absolute_path))
        allowed = sorted(node.get("properties", {}))
        extra = sorted(set(err.instance) - set(allowed))
        hints = []
        for e in extra:
            close = difflib.get_close_matches(e, allowed, n=1)
            hints.append(f"'{e}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
        return ConfigError(
            f"unknown config key {', '.join(hints)} under '{key}'",
            where=f"{source}: {key}",
            fix=f"allowed keys under '{key}': {', '.join(allowed)}",
        )
    if err.validator == "enum":
        return ConfigError(
            f"config key '{key}' = {err.instance!r} is not an allowed value",
            where=source,
            fix=f"use one of: {', '.join(map(repr, err.validator_value))}",
        )
    if err.validator == "required":
        return ConfigError(
            f"config is missing a required key: {err.message}",
            where=f"{source}: {key}",
            fix="add it (see config/config.yaml for an example)",
        )
    if err.validator == "pattern":
        return ConfigError(
            f"config name {err.instance!r} under '{key}' is not allowed: it becomes part of a "
            f"file path",
            where=source,
            fix=f"use only letters, digits, '_' and '-' (pattern {err.validator_value})",
        )
    if err.validator == "type":
        return ConfigError(
            f"config key '{key}' = {err.instance!r} has the wrong type",
            where=source,
            fix=f"it must be of type {err.validator_value}",
        )
    return ConfigError(
        f"config key '{key}': {err.message}",
        where=source,
        fix="see config/schema.yaml for the allowed values",
    )


def validate_config(
    config: dict[str, Any], schema_path: str | os.PathLike = SCHEMA, source: str = "config"
) -> dict[str, Any]:
    """Validate ``config`` against the schema and fill in defaults; raise :class:`ConfigError`."""
    if "base" in config:  # resolved by load_config_file / resolve_bases, never left over
        raise ConfigError(
            f"config key 'base' ({config['base']!r}) was not resolved: a base is loaded only "
            "from a config file passed with --configfile (or `fedclust check-config FILE`)",
            where=f"{source}: base",
            fix="put `base: FILE` into the config file you pass with --configfile",
        )
    schema = load_yaml(schema_path)
    validator_cls = jsonschema.validators.validator_for(schema)
    errors = sorted(validator_cls(schema).iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        raise _describe(errors[0], schema, source)
    fill_defaults(config, schema)
    for name, where in path_names(config, schema):
        check_name(name, f"{source}: {where}")
    check_references(config, source)
    return config


def path_names(node: Any, schema: dict[str, Any], where: str = "") -> Any:
    """(name, dotted key) of every config name that becomes part of a path: the keys of a
    mapping whose schema has ``propertyNames`` with a ``pattern``, list items and strings whose
    schema has one. :func:`validate_config` passes each through :func:`check_name` (the
    schema's patterns say the same, but JSON Schema's ``$`` also matches before a trailing
    newline; issue 30 item 4)."""
    if isinstance(node, dict):
        props, extra = schema.get("properties", {}), schema.get("additionalProperties")
        keyed = "pattern" in schema.get("propertyNames", {})
        for key, value in node.items():
            at = f"{where}.{key}" if where else str(key)
            if keyed:
                yield key, at
            sub = props.get(key, extra if isinstance(extra, dict) else None)
            if sub is not None:
                yield from path_names(value, sub, at)
    elif isinstance(node, list) and isinstance(schema.get("items"), dict):
        for i, value in enumerate(node):
            yield from path_names(value, schema["items"], f"{where}[{i}]")
    elif isinstance(node, str) and "pattern" in schema:
        yield node, where


def fill_defaults(node: Any, schema: dict[str, Any]) -> Any:
    """Fill schema defaults into ``node`` in place, recursively: named ``properties``,
    ``additionalProperties`` entries (e.g. every ``data.splits.<name>``) and array ``items``."""
    if isinstance(node, dict):
        props = schema.get("properties", {})
        for key, sub in props.items():
            if key not in node and "default" in sub:
                node[key] = copy.deepcopy(sub["default"])
        extra = schema.get("additionalProperties")
        for key, value in node.items():
            sub = props.get(key, extra if isinstance(extra, dict) else None)
            if sub is not None:
                fill_defaults(value, sub)
    elif isinstance(node, list) and isinstance(schema.get("items"), dict):
        for value in node:
            fill_defaults(value, schema["items"])
    return node


@functools.lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    """The parsed schema, read once per process (:func:`defaults_at` is called per unit; the
    schema is never modified: :func:`fill_defaults` copies its defaults)."""
    return load_yaml(SCHEMA)


def defaults_at(entry: dict[str, Any], path: list[str]) -> dict[str, Any]:
    """A copy of ``entry`` with the defaults of the schema node at ``path`` (``"*"`` = an
    ``additionalProperties`` entry), e.g. ``defaults_at(spec, ["data", "splits", "*"])``."""
    node = _schema()
    for key in path:
        node = node["additionalProperties"] if key == "*" else node["properties"][key]
    return fill_defaults(copy.deepcopy(entry), node)


def _subset(values: Any, allowed: Any, key: str, source: str, defined_by: str) -> None:
    unknown = [v for v in values or [] if v not in allowed]
    if unknown:
        raise ConfigError(
            f"config key '{key}' names {', '.join(map(repr, unknown))}, which "
            f"{defined_by} does not define",
            where=f"{source}: {key}",
            fix=f"use only: {', '.join(map(str, allowed)) or '(nothing defined)'}",
        )


def check_references(config: dict[str, Any], source: str = "config") -> None:
    """Cross-key checks the schema cannot express (run after defaults are filled).

    Stage cohort/dataset/split lists must name what the data section defines; simulators need
    at least as many samples as clusters.
    """
    data = config.get("data", {})
    data_mirror(config)  # a mirror that is set must exist (issue 30 A)
    rnaseq = data.get("rnaseq", {})
    cohorts = rnaseq.get("cohorts", [])
    splits = data.get("splits", {})
    for stage in ("hac", "attacks"):
        cfg = config.get(stage, {})
        if cfg.get("enabled", True):
            _subset(cfg.get("cohorts"), cohorts, f"{stage}.cohorts", source, "data.rnaseq.cohorts")
    dec = config.get("dec", {})
    if dec.get("enabled", False):
        from .data.workflow import DATASETS

        datasets = dec.get("datasets", {})
        _subset(datasets, DATASETS, "dec.datasets", source, "the data section")
        _subset(
            dec.get("federated_datasets"),
            list(datasets),
            "dec.federated_datasets",
            source,
            "dec.datasets",
        )
        _subset(dec.get("splits"), list(splits), "dec.splits", source, "data.splits")
        tuning = dec.get("tuning") or {}
        if tuning.get("enabled"):  # a misspelt name would tune nothing, silently (item 6)
            for key, names in (
                ("datasets", tuning.get("datasets")),
                ("reuse", list(tuning.get("reuse") or {})),
                (
                    "step1.architectures",
                    list((tuning.get("step1") or {}).get("architectures") or {}),
                ),
            ):
                _subset(names, list(datasets), f"dec.tuning.{key}", source, "dec.datasets")
            from .dec.tuning_spec import check_reuse

            check_reuse(dec)
        for name in dec.get("splits") or []:
            applies = splits[name]["datasets"]
            _subset(
                dec.get("federated_datasets"),
                applies,
                f"dec.splits ({name})",
                source,
                f"data.splits.{name}.datasets",
            )
    from .survival.workflow import check_config as check_survival

    check_survival(config, source)
    sims = []
    if rnaseq.get("source", "simulated") == "simulated":
        base = rnaseq.get("simulate", {})
        sims.append(("data.rnaseq.simulate", base))
        # overrides of cohorts not listed are ignored (a config may run a subset of cohorts)
        for cohort, over in (rnaseq.get("simulate_cohorts") or {}).items():
            sims.append((f"data.rnaseq.simulate_cohorts.{cohort}", {**base, **over}))
    if data.get("mds", {}).get("source", "simulated") == "simulated":
        sims.append(("data.mds.simulate", data.get("mds", {}).get("simulate", {})))
    for key, sim in sims:
        if sim.get("n_clusters", 1) > sim.get("n_samples", 10**9):
            raise ConfigError(
                f"{key}: more clusters ({sim['n_clusters']}) than samples ({sim['n_samples']})",
                where=f"{source}: {key}",
                fix="lower n_clusters or raise n_samples",
            )
        props = sim.get("cluster_proportions")
        if props is not None and len(props) != sim.get("n_clusters", 4):
            raise ConfigError(
                f"{key}: {len(props)} cluster_proportions for n_clusters = "
                f"{sim.get('n_clusters', 4)}",
                where=f"{source}: {key}",
                fix="give one share per cluster, or cluster_proportions: null",
            )
    from .hac.workflow import check_config as check_hac

    with _quiet():
        check_hac(config, source)
    check_stages(config, source)


def check_stages(config: dict[str, Any], source: str = "config") -> None:
    """The stages' config-time checks that need the data shapes (issue 30 item 12): splits fit
    the datasets of known size, federated DEC's k fits its centres, ADMM's tasks and floor,
    FedCRef's experiments and client systems. Each stage's ``workflow`` module holds its own."""
    from .admm.workflow import check_config as check_admm
    from .data.workflow import check_config as check_data
    from .fedcref.workflow import check_config as check_fedcref

    split_sizes = check_data(config, source)
    check_dec_centres(config, split_sizes)
    check_admm(config, split_sizes, source)
    check_fedcref(config, source)
    from .privacy_utility.workflow import check_config as check_privacy_utility

    check_privacy_utility(config, source)


def check_dec_centres(config: dict[str, Any], split_sizes: dict[str, dict[str, list]]) -> None:
    """Federated DEC: a centre shares its k local centroids only with more than k samples and
    every local cluster ≥ ``dec.federated.min_cluster_size`` (else it abstains); when no centre
    of a split can, every centre abstains and the run stops after its TSAE rounds."""
    dec = config.get("dec", {})
    if not dec.get("enabled", False):
        return
    m = int(dec.get("federated", {}).get("min_cluster_size", 1))
    for d in dec.get("federated_datasets") or []:
        k = int(dec["datasets"][d]["k"])
        for split in dec.get("splits") or []:
            sizes = split_sizes.get(split, {}).get(d)
            need = max(k + 1, m * k)
            if sizes and max(sizes) < need:
                raise ConfigError(
                    f"dec: k = {k} clusters on {d}, but the largest centre of split {split} "
                    f"holds {max(sizes)} samples: every centre would abstain from the centroid "
                    f"round (a centre needs > k and min_cluster_size × k = {m * k} samples)",
                    where=f"dec.datasets.{d}.k, dec.splits ({split})",
                    fix=f"lower k, use fewer centres in data.splits.{split}, or lower "
                    "dec.federated.min_cluster_size",
                )


@contextlib.contextmanager
def _quiet():
    """Config-time checks raise; the warnings they would log at run time stay silent here."""
    import logging

    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


def check_name(name: str, where: str) -> str:
    """A name that becomes part of a path (split, center, dataset) must match :data:`NAME_RE`."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise ConfigError(
            f"name {name!r} cannot be used in a file path",
            where=where,
            fix="use only letters, digits, '_' and '-'",
        )
    return name


MIRROR_ENV = "FEDCLUST_DATA_MIRROR"


def data_mirror(config: dict[str, Any]) -> Path | None:
    """The offline data mirror: config ``data.mirror``, else env ``FEDCLUST_DATA_MIRROR``; None
    when neither is set. A mirror that is set must be an existing folder: a missing path, a file
    or a symlink loop raises :class:`ConfigError` naming the path and the setting (issue 30 A,
    item 8), at config time (:func:`check_references`), not deep in a download rule."""
    value = config.get("data", {}).get("mirror")
    setting = "config key data.mirror"
    if not value:
        value, setting = os.environ.get(MIRROR_ENV), f"environment variable {MIRROR_ENV}"
    if not value:
        return None
    value = str(value)
    path = Path(value).expanduser()
    fix = (
        f"point {setting} at the mirror folder (one folder per dataset, e.g. ipssm/, tcga/), "
        f"or unset it: offline configs need no mirror"
    )
    try:
        resolved = path.resolve(strict=True)
    except RuntimeError:  # Python < 3.13: "Symlink loop from ..."
        raise ConfigError(
            f"the data mirror {value!r} is a symlink loop", where=setting, fix=fix
        ) from None
    except OSError as err:  # missing (FileNotFoundError), ELOOP (3.13+), permission
        missing = isinstance(err, FileNotFoundError)
        what = "does not exist" if missing else f"cannot be read ({err})"
        raise ConfigError(f"the data mirror {value!r} {what}", where=setting, fix=fix) from None
    if not resolved.is_dir():
        raise ConfigError(f"the data mirror {value!r} is not a folder", where=setting, fix=fix)
    return resolved


# --- config files that build on another (`base:`), issue 14 --------------------------------


def merge_config(into: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Merge ``over`` into ``into`` in place the way Snakemake merges ``--configfile`` files:
    mappings recursively, every other value (lists included) replaced; returns ``into``."""
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            merge_config(into[key], value)
        else:
            into[key] = copy.deepcopy(value)
    return into


def load_config_file(path: str | os.PathLike, _seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """A config file with its ``base:`` chain resolved: ``base: thesis.yaml`` (a path relative
    to the file) loads that file first and merges this one over it (:func:`merge_config`).
    The result has no ``base`` key."""
    path = _resolved(path)
    if path in _seen:
        chain = " -> ".join(str(p) for p in (*_seen, path))
        raise ConfigError(
            "config files name each other as base", where=chain, fix="break the cycle"
        )
    data = load_yaml(path)
    base = data.pop("base", None)
    if base is None:
        return data
    if not isinstance(base, str) or not base:
        raise ConfigError(
            f"base must be a file name, got {base!r}",
            where=f"{path}: base",
            fix="base: thesis.yaml (a path relative to this file)",
        )
    base_path = _resolved(path.parent / base, f"{path}: base")
    if not base_path.exists():
        raise ConfigError(
            f"base config {base!r} not found",
            where=f"{path}: base",
            fix=f"give a path relative to {path.parent} (e.g. base: thesis.yaml)",
        )
    return merge_config(load_config_file(base_path, (*_seen, path)), data)


def _resolved(path: str | os.PathLike, where: str | None = None) -> Path:
    """``Path(path).resolve()``, a symlink loop as :class:`ConfigError` (Python < 3.13 raises
    RuntimeError, later versions OSError)."""
    try:
        return Path(path).resolve()
    except (RuntimeError, OSError):
        raise ConfigError(
            f"{path} is a symlink loop", where=where or str(path), fix="point it at a real file"
        ) from None


def uses_base(paths: list[Any]) -> bool:
    """True when one of the config files has a ``base:`` key."""
    return any(os.path.isfile(p) and "base" in load_yaml(p) for p in paths)


def resolve_bases(
    config: dict[str, Any],
    workflow_files: list[Any],
    cli_files: list[Any],
    cli_config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Rebuild Snakemake's ``config`` in place with the ``base:`` chains of the command-line
    config files resolved: the workflow's ``configfile:`` files (those that exist), then each
    ``--configfile`` with its bases first, then ``--config`` key=value pairs. Without a ``base``
    key anywhere, ``config`` is left as it is. ``--config base=FILE`` is refused (issue 30 item
    6): Snakemake would merge it as a plain key and load nothing."""
    if "base" in (cli_config or {}):
        raise ConfigError(
            f"'base' given on the command line (--config base={cli_config['base']}) is not "
            "loaded: only a config file may name a base",
            where="--config base",
            fix="write `base: FILE` (a path relative to that file) into a config file and pass "
            "that file with --configfile",
        )
    if not uses_base(cli_files):
        return config
    cli = {Path(p).resolve() for p in cli_files}
    new: dict[str, Any] = {}
    for f in workflow_files:
        if Path(f).is_file() and Path(f).resolve() not in cli:
            merge_config(new, load_yaml(f))
    for f in cli_files:
        merge_config(new, load_config_file(f))
    merge_config(new, dict(cli_config or {}))
    config.clear()
    config.update(new)
    return config
