"""The thesis' published numbers (spec §6, Tables 4.1–4.4), shown beside ours in the report."""

from __future__ import annotations

ORDER = ["RAR", "GL_conditional", "GL_random", "customized", "FL"]
TABLE_4_1_LOSS = {  # round -> RAR, GL_conditional, GL_random, customized, FL
    1: [4.37, 3.89, 3.93, 3.89, 3.75],
    2: [4.01, 3.27, 3.26, 3.32, 3.11],
    3: [3.62, 2.8, 3.02, 2.82, 2.7],
    4: [3.24, 2.42, 2.52, 2.34, 2.37],
    5: [2.95, 2.11, 2.4, 1.97, 2.0],
    6: [2.6, 1.87, 2.14, 1.66, 1.67],
    7: [2.22, 1.67, 1.85, 1.4, 1.31],
    8: [1.88, 1.51, 1.63, 1.19, 1.01],
    9: [1.59, 1.37, 1.67, 1.06, 0.84],
    10: [1.4, 1.27, 1.45, 0.96, 0.79],
}
TABLE_4_2_ACCURACY = {
    1: [0.55, 0.62, 0.48, 0.56, 0.8],
    2: [0.56, 0.74, 0.57, 0.63, 0.83],
    3: [0.75, 0.84, 0.67, 0.78, 0.82],
    4: [0.81, 0.84, 0.8, 0.82, 0.83],
    5: [0.81, 0.86, 0.84, 0.8, 0.83],
    6: [0.82, 0.86, 0.84, 0.79, 0.84],
    7: [0.83, 0.86, 0.85, 0.8, 0.83],
    8: [0.84, 0.86, 0.84, 0.8, 0.83],
    9: [0.84, 0.84, 0.84, 0.8, 0.82],
    10: [0.84, 0.85, 0.84, 0.8, 0.83],
}
TABLE_4_3_AUC = {
    1: [0.85, 0.87, 0.88, 0.87, 0.89],
    2: [0.9, 0.91, 0.9, 0.88, 0.9],
    3: [0.92, 0.91, 0.91, 0.88, 0.9],
    4: [0.91, 0.9, 0.92, 0.88, 0.9],
    5: [0.91, 0.9, 0.9, 0.89, 0.9],
    6: [0.91, 0.89, 0.91, 0.89, 0.9],
    7: [0.91, 0.9, 0.91, 0.9, 0.9],
    8: [0.9, 0.89, 0.91, 0.91, 0.89],
    9: [0.9, 0.89, 0.91, 0.89, 0.9],
    10: [0.9, 0.9, 0.9, 0.89, 0.89],
}
TABLE_4_4_DIVERGENCE = {  # pair -> RAR, GL_conditional, GL_random, customized (round 50)
    "1-2": [0.79, 0.81, 0.44, 0.27],
    "1-3": [0.56, 0.14, 0.26, 0.35],
    "1-4": [0.48, 0.46, 0.24, 0.19],
    "1-5": [0.02, 0.34, 0.04, 0.03],
    "2-3": [0.88, 0.88, 0.23, 0.15],
    "2-4": [0.88, 0.76, 0.46, 0.21],
    "2-5": [0.79, 0.97, 0.43, 0.27],
    "3-4": [0.51, 0.49, 0.25, 0.23],
    "3-5": [0.56, 0.20, 0.25, 0.37],
    "4-5": [0.48, 0.58, 0.21, 0.21],
}
CENTRALIZED = {"test_loss_total": 0.7242, "test_accuracy": 0.7913, "test_auc": 0.8948}


#: our metric -> the thesis table it is printed beside. The thesis' AUC is Keras' 200-threshold
#: AUC, so Table 4.3 sits beside both the exact AUC and our numpy port of Keras' AUC.
EARLY = {"loss_total": TABLE_4_1_LOSS, "accuracy": TABLE_4_2_ACCURACY, "auc": TABLE_4_3_AUC,
         "auc_keras": TABLE_4_3_AUC}  # fmt: skip


def early(metric: str) -> dict[str, dict[int, float]]:
    """``{approach: {round: value}}`` of Table 4.1 (loss_total), 4.2 (accuracy), 4.3 (auc,
    auc_keras)."""
    tab = EARLY[metric]
    return {a: {r: v[i] for r, v in tab.items()} for i, a in enumerate(ORDER)}


def divergence_round50() -> dict[str, dict[str, float]]:
    return {a: {p: v[i] for p, v in TABLE_4_4_DIVERGENCE.items()} for i, a in enumerate(ORDER[:4])}
