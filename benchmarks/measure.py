"""How every figure of ``python -m benchmarks`` is measured: repeats, CUDA-event kernel time, the table.

A *figure* is a rate (work per second, in a unit) from ``repeats`` timed calls after
``warmup`` untimed ones (the first compiles or loads the kernels): its median, minimum and
maximum, and its spread ``(max - min) / median``. Each call of a public run function is
timed twice:

* ``kernel``: the device time of the package's kernels, summed from the CUDA events that
  :func:`gpuensembles.core.backend.kernel_timer` records around every launch site (on the
  stream the launches use), so no host work, transfer or compilation is in it;
* ``call``: the wall time of the whole public call (validation, set-up, transfers, the
  Dataset), as a user sees it.

On the CPU backend there are no events: the kernel figure is then the whole call's. Naive
baselines time their own launches with events the same way (:mod:`benchmarks.baselines`).
"""

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gpuensembles.core import backend as _backend

#: A figure whose repeats spread by more than this is flagged (DESIGN.md, Performance).
SPREAD_LIMIT = 0.05


@dataclass
class Figure:
    """Rates of the repeats of one measurement, in ``unit`` (``per_second`` False: seconds per call)."""

    values: list
    unit: str
    what: str = ""
    per_second: bool = True

    @property
    def median(self) -> float:
        return statistics.median(self.values) if self.values else math.nan

    @property
    def low(self) -> float:
        return min(self.values) if self.values else math.nan

    @property
    def high(self) -> float:
        return max(self.values) if self.values else math.nan

    @property
    def spread(self) -> float:
        """``(max - min) / median``."""
        return (self.high - self.low) / self.median if self.values and self.median else math.nan

    def text(self) -> str:
        if not self.values:
            return "-"
        return f"{_num(self.median)} ({_num(self.low)}-{_num(self.high)})"


def _num(x: float) -> str:
    if not math.isfinite(x):
        return "nan"
    return f"{x:.4g}" if 1e-3 <= abs(x) < 1e5 else f"{x:.3e}"


@dataclass
class Timed:
    """Per-repeat work, kernel seconds (NaN without events) and whole-call seconds."""

    work: list = field(default_factory=list)
    kernel: list = field(default_factory=list)
    call: list = field(default_factory=list)
    basis: str = "kernels (CUDA events)"

    def _seconds(self, which):
        if which == "kernel" and self.kernel and all(math.isfinite(k) for k in self.kernel):
            return self.kernel, self.basis
        return self.call, "whole call"

    def rates(self, unit: str, scale: float = 1.0, which: str = "kernel") -> Figure:
        """Work per second (times ``scale``) from the kernel time (``which="call"``: the whole call's).

        Without kernel times (the CPU backend) the whole call's are used.
        """
        seconds, basis = self._seconds(which)
        return Figure([w * scale / s for w, s in zip(self.work, seconds)], unit, basis)

    def seconds(self, which: str = "kernel") -> Figure:
        """Seconds per call (lower is better), from the kernel time or the whole call's."""
        seconds, basis = self._seconds(which)
        return Figure(list(seconds), "s", basis, per_second=False)


def timed(call: Callable, repeats: int, warm: Callable | None = None) -> Timed:
    """Run ``warm()`` (default: ``call()``) once, then ``call() -> work`` ``repeats`` times under a kernel timer.

    ``work`` is what one call did (steps, flips, ...); ``warm`` may be a smaller call that
    compiles the same kernels. Returns the work and the kernel and whole-call seconds of
    each timed repeat.
    """
    (warm or call)()
    out = Timed()
    for _ in range(repeats):
        with _backend.kernel_timer() as timer:
            t0 = time.perf_counter()
            work = call()
            out.call.append(time.perf_counter() - t0)
        out.work.append(float(work))
        out.kernel.append(timer.seconds() if timer.launches() else math.nan)
    return out


def repeated(launch: Callable, repeats: int, basis: str = "CUDA events", warm: Callable | None = None) -> Timed:
    """Run ``warm()`` (default: ``launch()``) once, then ``launch() -> (work, seconds)`` ``repeats`` times.

    For baselines that time themselves (``basis`` says how).
    """
    (warm or launch)()
    out = Timed(basis=basis)
    for _ in range(repeats):
        t0 = time.perf_counter()
        work, seconds = launch()
        out.call.append(time.perf_counter() - t0)
        out.work.append(float(work))
        out.kernel.append(seconds)
    return out


@dataclass
class Row:
    """One line of the table: the package's figure, its whole call, and the baseline of the same run.

    ``ratio`` is package / baseline for rates and baseline / package for seconds per call
    (so > 1 means the package is ahead), or what ``ratio_text`` says (e.g. a fraction of a bound).
    """

    workload: str
    package: Figure
    call: Figure | None
    baseline_name: str
    baseline: Figure | None
    ratio_as_percent: bool = False

    @property
    def ratio(self) -> float:
        if self.baseline is None:
            return math.nan
        if self.package.per_second:
            return self.package.median / self.baseline.median
        return self.baseline.median / self.package.median

    @property
    def spread(self) -> float:
        return max(f.spread for f in (self.package, self.baseline) if f is not None)

    def cells(self) -> list:
        ratio = "-" if self.baseline is None else f"{self.ratio:.1%}" if self.ratio_as_percent else f"{self.ratio:.3g}x"
        flag = "SPREAD" if self.spread > SPREAD_LIMIT else ""
        return [self.workload, self.package.unit, self.package.text(), self.package.what,
                self.call.text() if self.call is not None else "-", self.baseline_name,
                self.baseline.text() if self.baseline is not None else "-", ratio, f"{self.spread:.1%}", flag]


COLUMNS = ["workload", "unit", "package: median (min-max)", "timed", "whole call: median (min-max)", "baseline",
           "baseline: median (min-max)", "ratio", "spread", "flag"]


def table(rows) -> str:
    """The rows as one Markdown table."""
    lines = [COLUMNS] + [row.cells() for row in rows]
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(COLUMNS))]
    text = ["| " + " | ".join(str(c).ljust(w) for c, w in zip(line, widths)) + " |" for line in lines]
    text.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(text)
