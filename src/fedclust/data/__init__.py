"""The data stage: download, parse, simulate, preprocess and split the datasets of fedclust.

Outputs follow the data contract in ``docs/ARCHITECTURE.md``; other stages read only those files
(or call :mod:`fedclust.data.preprocess` / :mod:`fedclust.data.split`).
"""
