"""The paper's numbers (seed 002 §7, Tables 1–8), shown beside ours in the report."""

from __future__ import annotations

# Table 1 (EMNIST, DEC init)
TABLE1 = {
    "EMNIST": {
        "acc_init": "0.781 (±0.045)",
        "acc_end": "0.894 (±0.031)",
        "k": "10.8 (±1.1) / 10",
        "wrong": "1.1 (±1.6)",
        "isolated": "87.5 (±3.2) → 19.1 (±7.2)",
    }
}
TABLE2 = [
    {"method": "FedCRef", "paradigm": "decentralized", "acc": "0.894", "k": "10.8/10"},
    {"method": "Global DEC", "paradigm": "centralized", "acc": "0.793", "k": "9/10"},
]


def _table(text: str, *key: type) -> dict:
    """A transcribed table: one row a line, cells split on ``|``; the first ``len(key)`` cells,
    converted by ``key``, are the row's key (a tuple when more than one), the rest its values."""
    out: dict = {}
    for line in text.strip().splitlines():
        cells = [c.strip() for c in line.split("|")]
        k = tuple(t(c) for t, c in zip(key, cells, strict=False))
        out[k if len(key) > 1 else k[0]] = tuple(cells[len(key) :])
    return out


def _join(left: dict, right: dict) -> dict:
    """Two tables of the same rows side by side (the paper's outcome table + accuracy table)."""
    return {k: left[k] + right[k] for k in left}


# Table 3: dataset | dirtiness | K found | wrong | isolated
_T3 = """
    EMNIST    | 0.0 | 10.1 (±0.7) / 10 | 0.0 (±0.0) | 89.4 (±2.5) → 17.3 (±3.9)
    EMNIST    | 0.3 | 9.8 (±1.1) / 10  | 5.1 (±1.7) | 87.6 (±4.2) → 16.1 (±1.3)
    EMNIST    | 0.5 | 10.2 (±0.9) / 10 | 6.9 (±1.2) | 89.4 (±5.6) → 48.0 (±3.2)
    KMNIST    | 0.0 | 9.8 (±1.6) / 10  | 0.0 (±0.0) | 87.0 (±6.7) → 18.6 (±3.4)
    KMNIST    | 0.3 | 9.8 (±0.8) / 10  | 2.0 (±1.1) | 88.1 (±4.3) → 19.2 (±1.4)
    KMNIST    | 0.5 | 10.8 (±0.9) / 10 | 3.1 (±0.9) | 86.4 (±3.8) → 31.0 (±2.5)
    KMNIST-49 | 0.0 | 27.2 (±1.6) / 31 | 2.4 (±2.3) | 201.4 (±11.5) → 40.0 (±7.8)
    KMNIST-49 | 0.3 | 27.4 (±2.6) / 31 | 7.4 (±2.2) | 197.8 (±14.5) → 53.4 (±4.3)
    KMNIST-49 | 0.5 | 24.8 (±4.4) / 31 | 8.2 (±3.0) | 218.6 (±17.2) → 89.8 (±5.1)
"""
# Table 4: dataset | dirtiness | ACC init | ACC end | improvement | ACC end perfect
_T4 = """
    EMNIST    | 0.0 | 1.0   | 0.948 (±0.011) | −5.2 (±1.05)    | 0.982 (±0.001)
    EMNIST    | 0.3 | 0.701 | 0.879 (±0.028) | 25.392 (±4.00)  | 0.949 (±0.0097)
    EMNIST    | 0.5 | 0.503 | 0.711 (±0.049) | 41.352 (±9.74)  | 0.914 (±0.0059)
    KMNIST    | 0.0 | 1.0   | 0.93 (±0.016)  | −7.0 (±1.6)     | 0.963 (±0.0025)
    KMNIST    | 0.3 | 0.700 | 0.863 (±0.031) | 23.286 (±4.43)  | 0.933 (±0.0047)
    KMNIST    | 0.5 | 0.504 | 0.765 (±0.058) | 51.786 (±11.51) | 0.905 (±0.0059)
    KMNIST-49 | 0.0 | 1.0   | 0.889 (±0.008) | −11.1 (±0.8)    | 0.933 (±0.0041)
    KMNIST-49 | 0.3 | 0.699 | 0.769 (±0.019) | 10.014 (±2.72)  | 0.889 (±0.0029)
    KMNIST-49 | 0.5 | 0.501 | 0.622 (±0.065) | 24.152 (±12.97) | 0.849 (±0.0011)
"""
# Tables 3/4: (dataset, dirtiness) → (K found, wrong, isolated, ACC init, ACC end, improvement,
# ACC end perfect)
TABLE34 = _join(_table(_T3, str, float), _table(_T4, str, float))

# Tables 5/6 (EMNIST, dirtiness 0.3), by overlap: K found | wrong | isolated, then
# ACC end | improvement | ACC end perfect
_T5 = """
    0.0 | 9.8 (±1.7) / 10 | 0.0 | 88.2 (±3.2) → 18.8 (±9.3)
    0.3 | 10 (±0.4) / 10  | 0.0 | 89.571 (±5.8) → 8.429 (±3.2)
    0.5 | 10 (±0.1) / 10  | 0.0 | 90.167 (±4.4) → 1.333 (±0.8)
"""
_T6 = """
    0.0 | 0.903 (±0.033) | 28.816 (±3.16) | 0.953 (±0.015)
    0.3 | 0.955 (±0.016) | 36.234 (±2.32) | 0.962 (±0.012)
    0.5 | 0.976 (±0.004) | 39.23 (±1.12)  | 0.97 (±0.003)
"""
TABLE56 = _join(_table(_T5, float), _table(_T6, float))

# Tables 7/8 (EMNIST, dirtiness 0.3, overlap 0), by number of clients (ours are matched by
# rank): clients | K found | wrong | isolated, then clients | ACC end | improvement | perfect
_T7 = """
    20 | 10.2 (±1.1) / 10 | 0.222 (±0.339) | 70.9 (±3.5) → 21.4 (±4.7)
    30 | 10.4 (±1.8) / 10 | 1.429 (±3.496) | 106.4 (±4.8) → 20.3 (±9.8)
    40 | 11.5 (±1.4) / 10 | 3.375 (±2.824) | 141.4 (±3.7) → 30.9 (±9.4)
    50 | 14.4 (±2.3) / 10 | 8.714 (±5.719) | 177.7 (±5.7) → 65.1 (±28.4)
"""
_T8 = """
    20 | 0.869 (±0.03) | 24.143 (±4.286)  | 0.921 (±0.041)
    30 | 0.905 (±0.035) | 29.101 (±5.064) | 0.937 (±0.029)
    40 | 0.86 (±0.06)  | 22.857 (±8.571)  | 0.953 (±0.007)
    50 | 0.801 (±0.08) | 14.265 (±10.913) | 0.955 (±0.010)
"""
TABLE78 = [(n, *row) for n, row in _join(_table(_T7, int), _table(_T8, int)).items()]
