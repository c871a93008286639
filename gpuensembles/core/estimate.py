"""How long a run will take, said before it starts, from the throughput measured on this machine.

A run function describes its work as a :class:`Work`: an amount in units a kernel
processes at a steady rate (integration steps, spin updates, oscillator steps), a ``kind``
naming the kernel variant whose rate applies, and what the amount rests on. Before the
first kernel starts, :func:`announce` converts it into seconds and, for a run of more than
:data:`ANNOUNCE_SECONDS`, prints one line to stderr. The rate is the one measured on this
device the last time a run of that kind took long enough to time (:func:`timed` records it,
compile time excluded, in ``throughput.json`` beside the kernel cache), else a stated
default per CPU thread or per GPU.
"""

import contextlib
import contextvars
import json
import math
import os
import sys
import time
from dataclasses import dataclass

import numba

from . import backend as _backend
from .cache import cache_dir, compile_seconds
from .progress import on_start

#: A run estimated to take longer than this [s] says so before it starts.
ANNOUNCE_SECONDS = 10.0
#: Runs shorter than this [s] (compiling excluded) do not update the measured throughput:
#: launch and start-up costs would dominate it.
MIN_TIMED_SECONDS = 0.5
#: File beside the kernel cache holding the measured throughputs.
THROUGHPUT_FILE = "throughput.json"


@dataclass(frozen=True)
class Work:
    """The work of a run, in units a kernel processes at a steady rate.

    Attributes
    ----------
    amount : float
        Units of work the run is expected to do (e.g. integration steps of all realizations).
    unit : str
        What one unit is (``"steps"``, ``"spin updates"``).
    kind : str
        The kernel variant whose throughput applies (e.g. ``"josephson underdamped euler
        float32"``); throughputs are measured and kept per device and kind.
    basis : str
        What ``amount`` rests on, in words (printed with the estimate).
    cpu_rate : float
        Default throughput per CPU thread [units/s], used until one is measured.
    gpu_rate : float
        Default throughput of one GPU [units/s], used until one is measured.
    advice : str
        What to change when the run takes more than an hour (empty: nothing said).
    span : float
        Units along the longest chain of work that runs in sequence (the steps of the
        slowest realization); 0 when no chain bounds the time.
    thread_rates : tuple of (float, float)
        Default throughput [units/s] along that chain: of one CPU thread and of one GPU thread.
        A GPU holding fewer realizations than it can run at once waits for its slowest one:
        the run then takes ``span / thread rate``, however small the total amount.
    """

    amount: float
    unit: str
    kind: str
    basis: str
    cpu_rate: float
    gpu_rate: float
    advice: str = ""
    span: float = 0.0
    thread_rates: tuple = (0.0, 0.0)

    def chain_seconds(self, backend: str) -> float:
        """Seconds of the longest chain on the resolved ``backend`` (0 when none is given)."""
        rate = self.thread_rates[backend == "cuda"]
        return self.span / rate if self.span and rate else 0.0


def _file():
    directory = cache_dir()
    return None if directory is None else directory / THROUGHPUT_FILE


def _read() -> dict:
    path = _file()
    try:
        return json.loads(path.read_text()) if path is not None else {}
    except (OSError, ValueError):
        return {}  # none yet, or unreadable: the defaults serve


def _key(work: Work, backend: str, decade=None) -> str:
    """``device | kind | 1eN``: throughputs are kept per decade of the amount of work.

    A small run spends a larger share of its time outside the kernels (launches, start-up,
    short loops): its throughput only stands for runs of about its size.
    """
    decade = _decade(work.amount) if decade is None else decade
    return f"{_backend.device_name(backend)} | {work.kind} | 1e{decade}"


def _decade(amount: float) -> int:
    amount = float(amount)
    return int(math.floor(math.log10(amount))) if math.isfinite(amount) and amount > 1 else 0


def throughput(work: Work, backend: str) -> tuple:
    """``(units per second, source)`` of ``work`` on the resolved ``backend`` of this process.

    Parameters
    ----------
    work : Work
        The work whose kind sets the throughput.
    backend : {"cpu", "cuda"}
        A resolved backend.

    Returns
    -------
    tuple of (float, str)
        The rate [units/s] and where it comes from: ``"measured on this machine"`` (by a
        run of the same kind within a decade of this amount of work) or the default's.
    """
    table, decade = _read(), _decade(work.amount)
    for near in (decade, decade - 1, decade + 1):  # a run of about this size
        measured = table.get(_key(work, backend, near))
        if measured:
            return float(measured), "measured on this machine"
    if backend == "cuda":
        return work.gpu_rate, "default for a GPU"
    return work.cpu_rate * numba.config.NUMBA_NUM_THREADS, f"default for {numba.config.NUMBA_NUM_THREADS} CPU threads"


def seconds(work: Work, backend: str) -> float:
    """Expected seconds of ``work`` on the resolved ``backend`` (compiling not included).

    The larger of the amount over the throughput and the longest chain over one thread's rate.
    """
    return max(work.amount / throughput(work, backend)[0], work.chain_seconds(backend))


def _duration(s: float) -> str:
    if s < 90:
        return f"{s:.2g} s"
    if s < 5400:
        return f"{s / 60:.2g} min"
    return f"{s / 3600:.3g} h"


def message(work: Work, backend: str) -> str:
    """The one-line estimate :func:`announce` prints."""
    rate, source = throughput(work, backend)
    s = seconds(work, backend)
    text = (f"gpuensembles: estimate: about {_duration(s)} for ~{work.amount:.2g} {work.unit} "
            f"({work.basis}) at {rate:.2g} {work.unit}/s ({source})")
    if work.chain_seconds(backend) > work.amount / rate:
        per = "GPU" if backend == "cuda" else "CPU"
        text += (f", bound by the slowest realization: ~{work.span:.2g} {work.unit} at "
                 f"{work.thread_rates[backend == 'cuda']:.2g} {work.unit}/s per {per} thread")
    if s > 3600 and work.advice:
        text += f"; consider {work.advice}"
    return text


def announce(work: Work, backend: str, progress="auto") -> float:
    """Print :func:`message` to stderr when ``work`` will take more than `ANNOUNCE_SECONDS`.

    Parameters
    ----------
    work : Work
        What the run will do.
    backend : {"auto", "cuda", "cpu"}
        The run's backend (resolved here).
    progress : {"auto", True, False}
        The run's ``progress=``; ``False`` keeps the run quiet, the estimate included.

    Returns
    -------
    float
        The expected seconds.
    """
    resolved = _backend.resolve(backend)
    if not math.isfinite(work.amount):  # theory gives no finite time for these parameters: nothing to say
        return math.inf
    s = seconds(work, resolved)
    if s > ANNOUNCE_SECONDS and progress is not False:
        print(message(work, resolved), file=sys.stderr, flush=True)
    return s


def record(work: Work, backend: str, amount: float, elapsed: float):
    """Keep ``amount / elapsed`` as the measured throughput of ``work``'s kind on this device.

    Nothing is kept for a run shorter than `MIN_TIMED_SECONDS`, for one whose time its slowest
    realization set (``Work.span``), or when the kernel cache is turned off (then the
    defaults serve). The file is replaced atomically, so processes
    that record at once leave a whole file.
    """
    path = _file()
    if path is None or elapsed < MIN_TIMED_SECONDS or not 0 < amount < math.inf or not math.isfinite(work.amount):
        return
    if work.chain_seconds(backend) > work.amount / throughput(work, backend)[0]:
        return  # the slowest realization set its time, not the throughput
    table = _read()
    table[_key(work, backend)] = amount / elapsed
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(table, indent=1, sort_keys=True))
        os.replace(temporary, path)
    except OSError:
        pass  # a read-only cache: the estimate keeps its current source


class _Clock:
    """What :func:`timed` yields: ``done`` is the work an eager run did (a lazy one leaves it None)."""

    def __init__(self, work: Work):
        self.work, self.done = work, None

    def ran(self, result, amount=None):
        """Note that ``result`` (an array, or a dict of them) was computed, doing ``amount`` units (default: all)."""
        values = result.values() if isinstance(result, dict) else (result,)
        dask = sys.modules.get("dask")
        if dask is None or not any(dask.is_dask_collection(v) for v in values):
            self.done = self.work.amount if amount is None else float(amount)


_TIMING: contextvars.ContextVar = contextvars.ContextVar("gpuensembles_timing", default=False)


@contextlib.contextmanager
def timed(work: Work, backend: str, progress="auto"):
    """Announce ``work`` when the run starts; afterwards record the throughput it reached.

    Inside another :func:`timed` block (a run function calling another) it does nothing:
    the outer run announces and times the whole.

    Parameters
    ----------
    work : Work
        The expected work (announced through :func:`~gpuensembles.core.progress.on_start`,
        after every check of the run has passed).
    backend : {"auto", "cuda", "cpu"}
        The run's backend.
    progress : {"auto", True, False}
        The run's ``progress=``.

    Yields
    ------
    _Clock
        Call its ``ran(result, amount)`` with the run's result (and the units of work it
        actually did); the throughput is recorded only for an eager result (a lazy one has
        not run yet).
    """
    clock = _Clock(work)
    if _TIMING.get():
        yield clock
        return
    started = {}

    def start():
        """Say the estimate and start the clock (when the run's checks have passed)."""
        announce(work, backend, progress)
        started.update(wall=time.perf_counter(), compiling=compile_seconds())

    token = _TIMING.set(True)
    try:
        with on_start(start):
            yield clock
    finally:
        _TIMING.reset(token)
    if clock.done is None or not started:
        return
    elapsed = time.perf_counter() - started["wall"] - (compile_seconds() - started["compiling"])
    record(work, _backend.resolve(backend), float(clock.done), elapsed)
