"""Critical path of a config's job DAG, weighted by the config's per-rule runtimes (issue 14).

On a cluster with enough nodes every job starts as soon as its inputs exist, so a run takes as
long as the longest chain of dependent jobs: the *critical path*. This module asks Snakemake for
the job DAG of a config (``snakemake --dag`` in a scratch folder, so every job is needed),
weights each job by its rule's ``runtime`` (minutes) from the config's ``resources`` section
(``resources.rules.<rule>.runtime``, else ``resources.default.runtime``; with ``--profile``, the
profile's ``set-resources`` win, as on SLURM) and prints the job count, the jobs per rule, the
critical path (its jobs and summed minutes) and the total job-minutes.

    python -m fedclust.perf.critical_path --configfile config/thesis.yaml [--profile profiles/slurm]

The runtimes are the config's per-job estimates (docs/RESOURCES.md), so the path is an estimate
of a cluster run's wall time with unlimited nodes, queueing aside. Rules that do no work (the
target rule ``all``) weigh 0.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..config import SCHEMA, fill_defaults, load_config_file, load_yaml
from ..errors import ConfigError, FedclustError

#: rules that only collect targets: no work, weight 0
ZERO_RULES = frozenset({"all"})

_NODE_RE = re.compile(r'^\s*(\d+)\s*\[label\s*=\s*"((?:[^"\\]|\\.)*)"')
_EDGE_RE = re.compile(r"^\s*(\d+)\s*->\s*(\d+)")


@dataclass(frozen=True)
class Job:
    """One node of the job DAG: its rule and the wildcards its DOT label shows (Snakemake
    labels a job with the wildcards its inputs' jobs do not already carry)."""

    id: int
    rule: str
    label: str


def parse_dot(text: str) -> tuple[dict[int, Job], list[tuple[int, int]]]:
    """Jobs and edges (``(dependency, dependent)``) of ``snakemake --dag`` DOT output."""
    jobs: dict[int, Job] = {}
    edges: list[tuple[int, int]] = []
    for line in text.splitlines():
        m = _NODE_RE.match(line)
        if m:
            parts = m.group(2).split("\\n")
            jobs[int(m.group(1))] = Job(int(m.group(1)), parts[0], ", ".join(parts[1:]))
            continue
        m = _EDGE_RE.match(line)
        if m:
            edges.append((int(m.group(1)), int(m.group(2))))
    if not jobs:
        raise FedclustError(
            "no jobs in the DAG output",
            where="snakemake --dag",
            fix="check that the config is valid (fedclust check-config FILE)",
        )
    unknown = {u for e in edges for u in e} - set(jobs)
    if unknown:
        raise FedclustError(f"DAG edges name unknown jobs {sorted(unknown)[:5]}", "--dag output")
    return jobs, edges


def parse_minutes(value: Any, where: str) -> float:
    """A Snakemake runtime in minutes: a number, or a string like ``90``, ``90m``, ``2h``,
    ``1d``, ``30s``."""
    if isinstance(value, bool):
        raise ConfigError(f"runtime {value!r} is not a duration", where=where)
    if isinstance(value, int | float):
        return float(value)
    m = re.fullmatch(r"\s*([0-9.]+)\s*(s|m|min|h|d)?\s*", str(value))
    if not m:
        raise ConfigError(
            f"runtime {value!r} is not a duration",
            where=where,
            fix="give minutes (e.g. 90) or a string like '2h'",
        )
    scale = {"s": 1 / 60, "m": 1, "min": 1, "h": 60, "d": 1440, None: 1}[m.group(2)]
    return float(m.group(1)) * scale


def _profile_set_resources(profile: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """``set-resources`` of a Snakemake profile (mapping form or ``rule:key=value`` list)."""
    path = Path(profile)
    path = path / "config.yaml" if path.is_dir() else path
    if not path.is_file():
        raise ConfigError(f"profile not found: {path}", fix="pass the profile folder")
    raw = (load_yaml(path) or {}).get("set-resources") or {}
    if isinstance(raw, dict):
        return {str(r): dict(v or {}) for r, v in raw.items()}
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    for item in raw:
        rule, _, kv = str(item).partition(":")
        key, _, value = kv.partition("=")
        out[rule][key] = value
    return dict(out)


def rule_minutes(
    config: dict[str, Any],
    rules: list[str],
    profile: str | os.PathLike | None = None,
    what_if: dict[str, float] | None = None,
) -> dict[str, tuple[float, str]]:
    """Per rule: (minutes per job, where the figure comes from). A rule's ``estimate`` (the
    expected wall time of one job, docs/RESOURCES.md) wins over its ``runtime`` (the SLURM
    limit, with a margin); ``resources.default.estimate`` over ``resources.default.runtime``.
    ``what_if`` (rule -> minutes, ``default`` for ``resources.default``) overrides everything:
    for "what if" questions."""
    what_if = dict(what_if or {})
    res = config.get("resources") or {}
    default = what_if.pop("default", None)
    default_estimate = None if default is not None else (res.get("default") or {}).get("estimate")
    default = default if default is not None else (res.get("default") or {}).get("runtime")
    per_rule = res.get("rules") or {}
    overrides = _profile_set_resources(profile) if profile else {}
    out = {}
    for rule in rules:
        if rule in ZERO_RULES:
            out[rule] = (0.0, "no work")
        elif rule in what_if:
            out[rule] = (float(what_if[rule]), "--set")
        elif "estimate" in (per_rule.get(rule) or {}):
            where = f"resources.rules.{rule}.estimate"
            out[rule] = (parse_minutes(per_rule[rule]["estimate"], where), "estimate")
        elif "runtime" in overrides.get(rule, {}):
            out[rule] = (parse_minutes(overrides[rule]["runtime"], rule), "profile")
        elif "runtime" in (per_rule.get(rule) or {}):
            where = f"resources.rules.{rule}.runtime"
            out[rule] = (parse_minutes(per_rule[rule]["runtime"], where), "rules")
        elif default_estimate is not None:
            where = "resources.default.estimate"
            out[rule] = (parse_minutes(default_estimate, where), "default estimate")
        elif default is not None:
            out[rule] = (parse_minutes(default, "resources.default.runtime"), "default")
        else:
            raise ConfigError(
                f"no runtime for rule {rule!r}",
                where="resources",
                fix="set resources.default.runtime (minutes)",
            )
    return out


@dataclass
class PathReport:
    jobs: dict[int, Job]
    minutes: dict[str, tuple[float, str]]
    path: list[int]
    path_minutes: float
    total_minutes: float

    @property
    def jobs_per_rule(self) -> Counter:
        return Counter(j.rule for j in self.jobs.values())


def critical_path(
    jobs: dict[int, Job], edges: list[tuple[int, int]], weight: dict[int, float]
) -> tuple[list[int], float]:
    """The heaviest chain of the DAG (node weights; Kahn order + dynamic programming) and its
    summed weight. Raises on a cycle."""
    succ: dict[int, list[int]] = defaultdict(list)
    indeg = dict.fromkeys(jobs, 0)
    for u, v in edges:
        succ[u].append(v)
        indeg[v] += 1
    best = {j: weight[j] for j in jobs}  # heaviest chain ending at j
    prev: dict[int, int | None] = dict.fromkeys(jobs)
    queue = deque(sorted(j for j, d in indeg.items() if d == 0))
    seen = 0
    while queue:
        u = queue.popleft()
        seen += 1
        for v in succ[u]:
            if best[u] + weight[v] > best[v]:
                best[v], prev[v] = best[u] + weight[v], u
            indeg[v] -= 1
            if indeg[v] == 0:
                queue.append(v)
    if seen != len(jobs):
        raise FedclustError("the job graph has a cycle", where="snakemake --dag")
    end = max(sorted(jobs), key=lambda j: best[j])
    path = [end]
    while prev[path[-1]] is not None:
        path.append(prev[path[-1]])  # type: ignore[arg-type]
    return path[::-1], best[end]


def analyse(
    dot: str,
    config: dict[str, Any],
    profile: str | os.PathLike | None = None,
    what_if: dict[str, float] | None = None,
) -> PathReport:
    """Job DAG (DOT text) + config resources -> :class:`PathReport`."""
    jobs, edges = parse_dot(dot)
    minutes = rule_minutes(config, sorted({j.rule for j in jobs.values()}), profile, what_if)
    weight = {i: minutes[j.rule][0] for i, j in jobs.items()}
    path, length = critical_path(jobs, edges, weight)
    return PathReport(jobs, minutes, path, length, sum(weight.values()))


def load_config(configfile: str | os.PathLike) -> dict[str, Any]:
    """The config file (``base:`` resolved) with the schema defaults filled in, as the
    workflow sees it when run with ``--configfile`` outside the repository folder."""
    return fill_defaults(load_config_file(configfile), load_yaml(SCHEMA))


def snakemake_dag(
    configfile: str | os.PathLike,
    snakefile: str | os.PathLike,
    targets: list[str] = (),  # type: ignore[assignment]
    extra: list[str] = (),  # type: ignore[assignment]
) -> str:
    """``snakemake --dag`` of the config, run in an empty scratch folder (every job needed)."""
    with tempfile.TemporaryDirectory(prefix="fedclust-dag-") as work:
        cmd = [sys.executable, "-m", "snakemake", *targets, "--dag", "--cores", "1", "-s",
               str(Path(snakefile).resolve()), "--directory", work, "--configfile",
               str(Path(configfile).resolve()), *extra]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
    start = proc.stdout.find("digraph")
    if proc.returncode != 0 or start < 0:
        raise FedclustError(
            "snakemake --dag failed",
            where=" ".join(cmd),
            fix=(proc.stderr or proc.stdout)[-2000:],
        )
    return proc.stdout[start:]


def format_report(rep: PathReport, top: int = 0) -> str:
    """Job count, jobs per rule (with minutes per job and their source), the critical path
    and the total job-minutes."""
    per_rule = rep.jobs_per_rule
    lines = [f"jobs: {len(rep.jobs)}", "", f"{'rule':<32}{'jobs':>6}{'min/job':>9}"
             f"{'job-min':>10}  source"]  # fmt: skip
    order = sorted(per_rule, key=lambda r: (-per_rule[r] * rep.minutes[r][0], r))
    for rule in order[: top or None]:
        m, src = rep.minutes[rule]
        lines.append(f"{rule:<32}{per_rule[rule]:>6}{m:>9g}{per_rule[rule] * m:>10g}  {src}")
    lines += ["", f"critical path: {rep.path_minutes:g} min ({rep.path_minutes / 60:.1f} h), "
              f"{len(rep.path)} jobs"]  # fmt: skip
    for i in rep.path:
        job = rep.jobs[i]
        m, src = rep.minutes[job.rule]
        wc = f" [{job.label}]" if job.label else ""
        lines.append(f"  {m:>7g} min  {job.rule}{wc}  ({src})")
    share: Counter = Counter()
    for i in rep.path:
        share[rep.jobs[i].rule] += rep.minutes[rep.jobs[i].rule][0]
    lines.append(
        "  by rule: "
        + ", ".join(f"{r} {m:g}" for r, m in sorted(share.items(), key=lambda x: -x[1]) if m)
    )
    lines += ["", f"total job-minutes: {rep.total_minutes:g} ({rep.total_minutes / 60:.1f} h)"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m fedclust.perf.critical_path",
        description="Job count, jobs per rule, critical path and total job-minutes of a "
        "config's DAG, each job weighted by its rule's runtime (minutes) from the config's "
        "resources section (or the profile's set-resources).",
    )
    ap.add_argument("--configfile", required=True, help="e.g. config/thesis.yaml")
    ap.add_argument("--profile", help="a Snakemake profile whose set-resources win (SLURM)")
    ap.add_argument("--snakefile", default=None, help="default: the Snakefile of this checkout")
    ap.add_argument("--dot", help="read the DAG from this DOT file instead of running snakemake")
    ap.add_argument("--save-dot", help="also write the DAG (DOT) here, for --dot later")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="RULE=MINUTES",
        help="what if RULE took MINUTES per job (default=N: resources.default)",
    )
    ap.add_argument("--top", type=int, default=0, help="list only the N heaviest rules")
    ap.add_argument("targets", nargs="*", help="snakemake targets (default: all)")
    args = ap.parse_args(argv)
    snakefile = args.snakefile or Path(__file__).resolve().parents[3] / "Snakefile"
    try:
        config = load_config(args.configfile)
        dot = (
            Path(args.dot).read_text()
            if args.dot
            else snakemake_dag(args.configfile, snakefile, args.targets)
        )
        if args.save_dot:
            Path(args.save_dot).write_text(dot)
        what_if = {}
        for item in args.set:
            rule, sep, value = item.partition("=")
            if not sep:
                raise ConfigError(f"--set {item!r}", fix="write RULE=MINUTES, e.g. hac_cohort=90")
            what_if[rule.strip()] = parse_minutes(value, f"--set {item}")
        rep = analyse(dot, config, args.profile, what_if)
    except (FedclustError, yaml.YAMLError, OSError) as err:
        print(f"critical_path: {err}", file=sys.stderr)
        return 2
    print(format_report(rep, args.top))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
