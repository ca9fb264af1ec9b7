"""Performance (issues 15, 23, 24): :mod:`.hac` times the federated HAC methods against pooled
scipy, :mod:`.preprocess` the federated RNA-seq preprocessing against pooled pydeseq2,
:mod:`.privacy` a secure-aggregation FedAvg round against a plain one and a DP-SGD epoch against
an SGD epoch, :mod:`.machine` describes the machine, :mod:`.report` writes the section,
:mod:`.critical_path` measures a workflow's job DAG."""
