"""Performance (issue 15): :mod:`.hac` times the federated HAC methods against pooled scipy,
:mod:`.machine` describes the machine, :mod:`.report` writes the section,
:mod:`.critical_path` measures a workflow's job DAG."""
