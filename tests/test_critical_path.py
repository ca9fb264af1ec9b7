"""fedclust.perf.critical_path: job count, jobs per rule and the heaviest chain of a job DAG."""

from __future__ import annotations

import pytest
import yaml

from fedclust.errors import ConfigError, FedclustError
from fedclust.perf.critical_path import (
    analyse,
    critical_path,
    format_report,
    main,
    parse_dot,
    parse_minutes,
    rule_minutes,
    snakemake_dag,
)

# a -> b1, b2 -> c -> all;  a -> d (a side branch); b2 is the heavy unit
DOT = r"""digraph snakemake_dag {
    graph[bgcolor=white, margin=0];
	0[label = "all", color = "0.00 0.6 0.85", style="rounded"];
	1[label = "prep\ncohort: X", color = "0.1 0.6 0.85", style="rounded"];
	2[label = "unit\nseed: 1", color = "0.2 0.6 0.85", style="rounded"];
	3[label = "unit\nseed: 2", color = "0.2 0.6 0.85", style="rounded"];
	4[label = "merge", color = "0.3 0.6 0.85", style="rounded"];
	5[label = "side", color = "0.4 0.6 0.85", style="rounded"];
	1 -> 2
	1 -> 3
	2 -> 4
	3 -> 4
	4 -> 0
	1 -> 5
	5 -> 0
}"""
RULES = {"unit": {"runtime": 100, "gpu": 1}, "side": {"runtime": "2h"}}
CONFIG = {"resources": {"default": {"runtime": 10}, "rules": RULES}}


def test_parse_dot_reads_jobs_rules_wildcards_and_edges():
    jobs, edges = parse_dot(DOT)
    assert [j.rule for j in jobs.values()] == ["all", "prep", "unit", "unit", "merge", "side"]
    assert jobs[3].label == "seed: 2" and len(edges) == 7 and (1, 5) in edges


def test_critical_path_is_the_heaviest_chain():
    rep = analyse(DOT, CONFIG)
    # prep 10 + side 120 = 130 beats prep 10 + unit 100 + merge 10 = 120
    assert rep.path == [1, 5, 0] and rep.path_minutes == 130
    assert rep.total_minutes == 10 + 100 + 100 + 10 + 120
    assert rep.jobs_per_rule == {"unit": 2, "all": 1, "prep": 1, "merge": 1, "side": 1}
    # brute force over every source-to-sink chain
    jobs, edges = parse_dot(DOT)
    w = {i: rep.minutes[j.rule][0] for i, j in jobs.items()}
    succ = {i: [v for u, v in edges if u == i] for i in jobs}

    def longest(i):
        return w[i] + max((longest(v) for v in succ[i]), default=0)

    assert max(longest(i) for i in jobs) == rep.path_minutes
    faster = {"resources": {**CONFIG["resources"], "rules": {"unit": {"runtime": 200}}}}
    assert analyse(DOT, faster).path in ([1, 2, 4, 0], [1, 3, 4, 0])  # a tie: either unit
    text = format_report(rep)
    assert "jobs: 6" in text and "critical path: 130 min (2.2 h), 3 jobs" in text
    assert "unit                                 2      100       200  rules" in text
    assert "total job-minutes: 340" in text and "by rule: side 120, prep 10" in text


def test_profile_set_resources_win(tmp_path):
    prof = tmp_path / "slurm"
    prof.mkdir()
    (prof / "config.yaml").write_text(yaml.safe_dump({"set-resources": {"side": {"runtime": 5}}}))
    m = rule_minutes(CONFIG, ["all", "prep", "side", "unit"], prof)
    assert m == {"all": (0.0, "no work"), "prep": (10.0, "default"), "side": (5.0, "profile"),
                 "unit": (100.0, "rules")}  # fmt: skip
    assert analyse(DOT, CONFIG, prof).path_minutes == 120
    (prof / "config.yaml").write_text(yaml.safe_dump({"set-resources": ["side:runtime=1h"]}))
    assert rule_minutes(CONFIG, ["side"], prof)["side"] == (60.0, "profile")


def test_bad_input_fails_clearly():
    assert parse_minutes("90m", "x") == 90 and parse_minutes("1d", "x") == 1440
    with pytest.raises(ConfigError, match="not a duration"):
        parse_minutes("soon", "resources.rules.x.runtime")
    with pytest.raises(ConfigError, match="no runtime for rule 'prep'"):
        rule_minutes({"resources": {}}, ["prep"])
    with pytest.raises(FedclustError, match="cycle"):
        jobs, _ = parse_dot(DOT)
        critical_path(jobs, [(1, 2), (2, 1)], dict.fromkeys(jobs, 1.0))
    with pytest.raises(FedclustError, match="no jobs"):
        parse_dot("digraph {}")


SNAKEFILE = """
configfile: "c.yaml"
rule all:
    input: "merged.txt", "side.txt"
rule prep:
    output: "prep.txt"
    resources: runtime=config["resources"]["default"]["runtime"]
    shell: "touch {output}"
rule unit:
    input: "prep.txt"
    output: "unit_{seed}.txt"
    shell: "touch {output}"
rule merge:
    input: expand("unit_{seed}.txt", seed=[1, 2, 3])
    output: "merged.txt"
    shell: "touch {output}"
rule side:
    input: "prep.txt"
    output: "side.txt"
    shell: "touch {output}"
"""


def test_cli_on_a_toy_workflow(tmp_path, capsys):
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(CONFIG))
    dot = snakemake_dag(tmp_path / "c.yaml", tmp_path / "Snakefile")  # the one snakemake call
    (tmp_path / "dag.dot").write_text(dot)
    argv = ["--configfile", str(tmp_path / "c.yaml"), "--dot", str(tmp_path / "dag.dot")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "jobs: 7" in out and "critical path: 130 min" in out
    assert "unit                                 3      100       300  rules" in out
    assert main([*argv, "--set", "side=1", "--set", "default=2"]) == 0
    assert "critical path: 104 min" in capsys.readouterr().out  # prep 2 + unit 100 + merge 2
    assert main([*argv, "--set", "side"]) == 2
    assert main([*argv, "--top", "1"]) == 0
    assert "prep" not in capsys.readouterr().out.split("critical path")[0]
    assert main(["--configfile", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml" in capsys.readouterr().err


def test_estimates_win_over_runtime_limits(tmp_path):
    """``estimate`` (expected minutes) weights a job, not ``runtime`` (the SLURM limit)."""
    cfg = {"resources": {"default": {"runtime": 10, "estimate": 2},
                         "rules": {"unit": {"runtime": 100, "estimate": 30},
                                   "side": {"runtime": 120}}}}  # fmt: skip
    prof = tmp_path / "slurm"
    prof.mkdir()
    (prof / "config.yaml").write_text(yaml.safe_dump({"set-resources": {"unit": {"runtime": 5}}}))
    m = rule_minutes(cfg, ["prep", "side", "unit"], prof)
    assert m == {"prep": (2.0, "default estimate"), "side": (120.0, "rules"),
                 "unit": (30.0, "estimate")}  # fmt: skip
    assert analyse(DOT, cfg).path_minutes == 122  # prep 2 -> side 120 -> all
