"""Progress bars of eager runs, and the moment a run starts its work.

A bar counts what a user recognises (realizations, lattices, runs, batches, systems) and
is drawn only when asked (``progress=True``) or, with ``progress="auto"``, when stderr is
a terminal: a log file never gets carriage-return updates.

:func:`on_start` lets a caller (the command line) act once every check of a run has
passed and before its first kernel starts: the work estimate is printed then, so bad
input is reported before any estimate.
"""

import contextlib
import contextvars
import sys
import threading

from .validation import check_choice

#: Values ``progress=`` takes.
PROGRESS = ("auto", True, False)

_ON_START: contextvars.ContextVar = contextvars.ContextVar("gpuensembles_on_start", default=None)
_STARTING = threading.Lock()


def shown(progress) -> bool:
    """Whether a bar is drawn for ``progress`` (``"auto"``: when stderr is a terminal).

    Parameters
    ----------
    progress : {"auto", True, False}
        The run function's ``progress=``.

    Returns
    -------
    bool
        True to draw the bar.

    Raises
    ------
    ValueError
        If ``progress`` is not one of :data:`PROGRESS`.
    """
    check_choice("progress", progress, PROGRESS)
    if progress == "auto":
        isatty = getattr(sys.stderr, "isatty", None)
        return bool(isatty and isatty())
    return bool(progress)


def bar(total: int, show: bool, unit: str = "realizations", desc: str | None = None, position: int | None = None):
    """A tqdm bar on stderr counting ``total`` ``unit`` (disabled when ``show`` is false).

    Parameters
    ----------
    total : int
        Units of the whole run.
    show : bool
        Draw it.
    unit : str
        What is counted (plural: ``"lattices"``).
    desc : str, optional
        A prefix (e.g. ``"L=64"``).
    position : int, optional
        The bar's line, for bars drawn at once (0: the first).

    Returns
    -------
    tqdm.tqdm
        The bar (a context manager).
    """
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not show, unit=f" {unit}", unit_scale=(total or 0) >= 10**4, leave=False,
                desc=desc, file=sys.stderr, position=position)


@contextlib.contextmanager
def on_start(callback):
    """Call ``callback()`` once, when the run inside the ``with`` block is about to start its work.

    That is after every check of its input (and its memory estimate) has passed, and
    before the first kernel is compiled or run; for a lazy result, before it is returned.

    Parameters
    ----------
    callback : callable
        Called without arguments, at most once.

    Yields
    ------
    None
        Run the run function inside the block.
    """
    token = _ON_START.set([callback])
    try:
        yield
    finally:
        _ON_START.reset(token)


def starting():
    """Tell a pending :func:`on_start` callback that the work starts now (the engine calls this).

    Safe from several threads of one run (copies of its context share the pending list): the
    callback runs once.
    """
    pending = _ON_START.get()
    with _STARTING:  # (held through the callback: no thread of the run starts before it is done)
        if pending:
            pending.pop()()
