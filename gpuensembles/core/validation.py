"""Checks every run function shares: counts, seeds, real parameters, ranges, memory.

Each raises before anything is allocated or compiled: a :class:`TypeError` when a value
has the wrong type (a string, ``None`` or a bool where a number is needed, a complex or
object array), a :class:`ValueError` when it has the right type but lies outside what is
allowed. Both messages name the parameter and say what is allowed.
"""

import contextlib
import contextvars
import math
import numbers
import os
import secrets

import numpy as np
import xarray as xr

#: Largest step (or sweep) count any kernel takes: counters are int64, and a few steps past
#: the limit must not overflow.
MAX_STEPS = 2**62


def _is_bool(value) -> bool:
    return isinstance(value, (bool, np.bool_))


def check_count(name: str, value, minimum: int = 1, maximum: int | None = None) -> int:
    """``value`` as an int if it is an integer in ``[minimum, maximum]``.

    Integer-valued floats (``1e6``) are accepted.

    Parameters
    ----------
    name : str
        The parameter, named in the messages.
    value : int
        The value to check.
    minimum : int
        Smallest allowed value.
    maximum : int, optional
        Largest allowed value (none by default).

    Returns
    -------
    int
        The value.

    Raises
    ------
    TypeError
        If ``value`` is not a number (a string, None, a bool, an array, ...).
    ValueError
        If it is not an integer or lies outside ``[minimum, maximum]``.
    """
    allowed = (f"an integer >= {_int_text(minimum)}" if maximum is None
               else f"an integer in [{_int_text(minimum)}, {_int_text(maximum)}]")
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {allowed}, got {type(value).__name__} {value!r}")
    if not isinstance(value, numbers.Integral):
        if not (math.isfinite(value) and float(value).is_integer()):
            raise ValueError(f"{name} must be {allowed}, got {value!r}")
        value = int(value)
    if value < minimum or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be {allowed}, got {_int_text(int(value))}")
    return int(value)


def _int_text(n: int) -> str:
    """``n``, or ``2**k`` / ``2**k - 1`` / ``-2**k`` for large powers of two (readable limits).

    Integers of more than 300 digits are shown by their order of magnitude.
    """
    for k in range(16, 128):
        for value, text in ((2**k, f"2**{k}"), (2**k - 1, f"2**{k} - 1"), (-(2**k), f"-2**{k}")):
            if n == value:
                return text
    if abs(n).bit_length() > 1000:
        return f"{'-' if n < 0 else ''}about 2**{abs(n).bit_length() - 1}"
    return str(n)


def check_seed(seed) -> int:
    """Validate a seed (``0 <= seed < 2**32``); ``None`` draws a fresh one from the OS.

    Parameters
    ----------
    seed : int or None
        The seed.

    Returns
    -------
    int
        The seed.
    """
    if seed is None:
        return secrets.randbits(32)
    return check_count("seed", seed, minimum=0, maximum=2**32 - 1)


def check_choice(name: str, value, allowed: tuple):
    """Raise unless ``value`` is one of ``allowed`` (strings, or ``True``/``False``/``"auto"``).

    Parameters
    ----------
    name : str
        The parameter.
    value : object
        The value given.
    allowed : tuple
        The allowed values.
    """
    for a in allowed:
        if isinstance(a, str) and isinstance(value, str) and value == a:
            return
        if _is_bool(a) and _is_bool(value) and bool(value) == a:
            return
    raise ValueError(f"{name} must be one of {allowed}, got {value!r}")


def check_flag(name: str, value) -> bool:
    """``value`` as a bool if it is one (or the integer 0 or 1), else TypeError naming ``name``.

    Parameters
    ----------
    name : str
        The parameter.
    value : bool
        The value given.

    Returns
    -------
    bool
        The flag.
    """
    if _is_bool(value) or (isinstance(value, numbers.Integral) and value in (0, 1)):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")


def check_real(name: str, value) -> float:
    """``value`` as a finite float if it is one real number, else TypeError (wrong type) or ValueError.

    Parameters
    ----------
    name : str
        The parameter.
    value : float
        The value given.

    Returns
    -------
    float
        The value.
    """
    arr = real_array(name, value)
    if arr.ndim:
        raise ValueError(f"{name} must be a single number, got shape {arr.shape}")
    if not np.isfinite(arr):
        raise ValueError(f"{name} must be finite (no NaN or inf), got {value!r}")
    return float(arr)


def check_representable(dtype: str, params: dict):
    """Raise ValueError if a parameter's magnitude overflows the working precision ``dtype``.

    Parameters
    ----------
    dtype : str
        ``"float32"`` or ``"float64"``: the precision the kernels compute in.
    params : dict of xarray.DataArray
        The checked parameters.
    """
    largest = float(np.finfo(dtype).max)
    for name, arr in params.items():
        big = np.abs(arr.values) > largest
        if np.any(big):
            raise ValueError(f"{name} = {arr.values[big].ravel()[0]:.3g} overflows {dtype} (largest {largest:.3g})"
                             + ("; use dtype='float64' or rescale" if dtype == "float32" else ""))


def check_dim(name: str, dim, dims) -> str:
    """``dim`` if it is the name of one of ``dims``, else TypeError (not a str) or ValueError.

    Parameters
    ----------
    name : str
        The parameter (``"dim"``).
    dim : str
        The dimension name given.
    dims : iterable of str
        The dimensions of the data.

    Returns
    -------
    str
        ``dim``.
    """
    dims = tuple(dims)
    if not isinstance(dim, str):
        raise TypeError(f"{name} must be a dimension name (str), one of {dims}, got {type(dim).__name__} {dim!r}")
    if dim not in dims:
        raise ValueError(f"{name} must be a dimension of the data, one of {dims}, got {dim!r}")
    return dim


def check_grid(name: str, values, minimum_size: int = 1) -> np.ndarray:
    """``values`` as a finite 1-D float64 array of at least ``minimum_size`` values.

    Parameters
    ----------
    name : str
        The parameter.
    values : array_like
        The grid.
    minimum_size : int
        Fewest values allowed.

    Returns
    -------
    numpy.ndarray
        The grid.
    """
    grid = real_array(name, values)
    if grid.ndim != 1 or grid.size < minimum_size:
        raise ValueError(f"{name} must be a 1-D grid of at least {minimum_size} values, got shape {grid.shape}")
    if not np.all(np.isfinite(grid)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return grid


def real_array(name: str, value) -> np.ndarray:
    """``value`` as a float64 array of any shape, refusing what is not a real number.

    Parameters
    ----------
    name : str
        The parameter, named in the messages.
    value : array_like
        Real numbers (ints or floats, nested sequences of them, numpy arrays).

    Returns
    -------
    numpy.ndarray
        The values in float64 (not checked for finiteness).

    Raises
    ------
    TypeError
        For strings, None, bools, complex numbers and objects that are not numbers.
    ValueError
        For ragged nested sequences.
    """
    what = f"{name} must be a real number or an array of them"
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{what}, got {type(value).__name__} {value!r}")
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as err:  # ragged nesting
        raise ValueError(f"{what} (of one shape), got {value!r} ({err})") from None
    if arr.dtype.kind == "O":
        flat = arr.ravel().tolist()
        if not all(isinstance(v, numbers.Real) and not _is_bool(v) for v in flat):
            kinds = sorted({type(v).__name__ for v in flat})
            raise TypeError(f"{what}, got elements of type {', '.join(kinds)}")
        try:
            return np.array(flat, dtype=np.float64).reshape(arr.shape)
        except OverflowError:
            raise ValueError(f"{name} must be finite, got a number too large for float64") from None
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{what}, got an array of dtype {arr.dtype} ({_kind_text(arr.dtype)})")
    return arr.astype(np.float64)


def _kind_text(dtype) -> str:
    return {"b": "booleans", "c": "complex numbers", "U": "strings", "S": "bytes", "M": "datetimes",
            "m": "time deltas", "V": "records"}.get(dtype.kind, "not real numbers")


def as_parameter(name: str, value) -> xr.DataArray:
    """Turn a scalar, 1-D sequence or 1-D DataArray into a float64 DataArray.

    Scalars become 0-d arrays; a 1-D array becomes dimension ``name`` with its values
    as coordinate; a DataArray keeps its own dimension (so two parameters given on one
    shared dimension vary together). Values must be finite real numbers.

    Parameters
    ----------
    name : str
        The parameter.
    value : float, sequence of float or xarray.DataArray
        Its value(s).

    Returns
    -------
    xarray.DataArray
        Named ``name``.

    Raises
    ------
    TypeError
        For strings, None, bools, complex or object values.
    ValueError
        For NaN or infinite values, more than one dimension, an empty or repeated sweep.
    """
    if isinstance(value, xr.DataArray):
        arr = value.copy(data=real_array(name, value.values))
        if arr.ndim > 1:
            raise ValueError(f"{name} must be a scalar or 1-D, got dims {arr.dims}")
    else:
        values = real_array(name, value)
        if values.ndim > 1:
            raise ValueError(f"{name} must be a scalar or 1-D, got shape {values.shape}")
        if values.ndim == 1:
            arr = xr.DataArray(values, dims=(name,), coords={name: values})
        else:
            arr = xr.DataArray(values)
    if arr.ndim == 1 and arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr.values)):
        raise ValueError(f"{name} must be finite (no NaN or inf), got {arr.values}")
    if arr.dims == (name,) and len(set(arr.values.tolist())) != arr.size:
        raise ValueError(f"{name} has repeated values: {arr.values}")
    return arr.rename(name)


def check_range(name: str, arr: xr.DataArray, low=-math.inf, high=math.inf, *, low_open=False, high_open=False,
                hint=""):
    """Raise ValueError unless every value of ``arr`` lies in the given interval.

    Parameters
    ----------
    name : str
        The parameter.
    arr : xarray.DataArray
        Its values.
    low, high : float
        The interval's ends.
    low_open, high_open : bool
        Whether an end is excluded.
    hint : str
        Appended to the message.
    """
    v = arr.values
    ok_low = v > low if low_open else v >= low
    ok_high = v < high if high_open else v <= high
    if not (np.all(ok_low) and np.all(ok_high)):
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        bad = v[~(ok_low & ok_high)] if v.ndim else v
        raise ValueError(f"{name} must lie in {interval}, got {bad}{hint}")


# --------------------------------------------------------------------------- memory


def available_memory() -> int:
    """Bytes of memory this process can still allocate without swapping.

    ``psutil.virtual_memory().available`` (``MemAvailable`` on Linux: free memory plus
    reclaimable caches), else free pages times the page size.

    Returns
    -------
    int
        Bytes.
    """
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except (ImportError, OSError, AttributeError):
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


def format_bytes(n: float) -> str:
    """``n`` bytes in binary units (``7.28 TiB``); any size, even beyond float64.

    Parameters
    ----------
    n : float
        Bytes.

    Returns
    -------
    str
        The text.
    """
    if n >= 2**1000:
        return f"about 2**{int(n).bit_length() - 1} B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024:
            return f"{int(n)} B" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PiB"


#: What to do when a result does not fit in memory, appended to the message of check_memory.
FIX = ("pass chunks= for a lazy result (ds.to_netcdf(path) then computes and writes it chunk by chunk), "
       "with store= where the function takes it to keep finished chunks, or run on a cluster "
       "(gpuensembles.cluster()); or ask for less")


_GATHERED: contextvars.ContextVar = contextvars.ContextVar("gpuensembles_gathered", default=None)


@contextlib.contextmanager
def gathered(fix: str):
    """Within the block, every result is gathered whole in this process (the command line does).

    Lazy results are then checked whole too (:func:`gathering`), and ``fix`` replaces the
    advice of :func:`check_memory`'s messages.

    Parameters
    ----------
    fix : str
        What the user can do instead.

    Yields
    ------
    None
        Run the run function inside the block.
    """
    token = _GATHERED.set(fix)
    try:
        yield
    finally:
        _GATHERED.reset(token)


def gathering() -> bool:
    """True inside :func:`gathered`: a lazy result will be computed whole in this process.

    Returns
    -------
    bool
        Whether to check a lazy result's whole size as well as its chunks'.
    """
    return _GATHERED.get() is not None


def check_memory(nbytes: int, what: str, *, limit: int | None = None, fix: str | None = None):
    """Raise ValueError if ``nbytes`` will not fit in the memory available now.

    Parameters
    ----------
    nbytes : int
        Bytes that will be allocated (a lower bound of what the run needs).
    what : str
        What needs them, naming the parameters that set the size (e.g. ``"the result of
        realizations=1000000000000 at 2 parameter points"``).
    limit : int, optional
        Bytes allowed (default: :func:`available_memory`).
    fix : str, optional
        What the user can do, appended to the message (default: :data:`FIX`, or the
        advice of an enclosing :func:`gathered`).

    Raises
    ------
    ValueError
        Naming ``what``, the bytes needed and the bytes available.
    """
    fix = fix or _GATHERED.get() or FIX
    limit = available_memory() if limit is None else limit
    if nbytes > limit:
        raise ValueError(f"{what} needs about {format_bytes(nbytes)} of memory, more than the "
                         f"{format_bytes(limit)} available: {fix}")
