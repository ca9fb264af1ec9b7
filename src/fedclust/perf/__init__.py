"""Performance (issues 15, 23): :mod:`.hac` times the federated HAC methods against pooled
scipy, :mod:`.preprocess` the federated RNA-seq preprocessing against pooled pydeseq2,
:mod:`.machine` describes the machine, :mod:`.report` writes the section, :mod:`.critical_path`
measures a workflow's job DAG."""
