"""The n_min grid of gradual sharing (spec §5.4; issue 30 item 3): which disclosure floors run
for a cohort of a given size. Standard library only: :mod:`fedclust.hac.workflow` (parse time,
config checks) and :mod:`fedclust.hac.experiments` both use it."""

from __future__ import annotations

from ..errors import ConfigError


def nmin_grid(n: int, values: list[int], fraction: float, cohort: str | None = None) -> list[int]:
    """The n_min values gradual sharing runs for a cohort of ``n`` samples (spec §5.4: up to
    10 %): the configured ``values`` ≤ ⌊fraction·n⌋, plus ⌊fraction·n⌋ itself when it is not
    below the smallest configured value. A disclosure floor is never lowered (issue 30 item 3):
    values above ⌊fraction·n⌋ are not run (logged); when none is left, :class:`ConfigError`."""
    import logging

    top = int(fraction * n)
    keep = {int(v) for v in values if v <= top}
    above = sorted(int(v) for v in values if v > top)
    of = f"cohort {cohort}, " if cohort else ""
    if not keep:
        raise ConfigError(
            f"hac.gradual: n_min {', '.join(map(str, above))} all lie above ⌊fraction × n⌋ = "
            f"{top} ({of}n = {n} samples, fraction {fraction:g}): none can run, and a floor is "
            "never lowered to fit",
            where="hac.gradual.n_min, hac.gradual.fraction",
            fix=f"raise hac.gradual.fraction or list an n_min ≤ {top}",
        )
    if above:
        logging.warning(
            "hac.gradual: n_min %s above ⌊fraction × n⌋ = %d (%sn = %d) not run (the grid stops "
            "at %g %% of the samples)", ", ".join(map(str, above)), top, of, n, 100 * fraction,
        )  # fmt: skip
    if top >= min(keep):
        keep.add(top)
    return sorted(keep)
