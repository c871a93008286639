"""Matplotlib figures (matplotlib is imported only here, lazily)."""

import re

import numpy as np


def axes(ax):
    """``ax`` if it is matplotlib Axes, new axes when it is None, else TypeError naming ``ax``.

    Parameters
    ----------
    ax : matplotlib.axes.Axes or None
        Where to draw.

    Returns
    -------
    matplotlib.axes.Axes
        The axes to draw into.
    """
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(5.5, 4))
        return ax
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise TypeError(f"ax must be matplotlib Axes or None, got {type(ax).__name__} {ax!r}")
    return ax


def plot_cdf(sample, ax=None, theory=None, label="simulation"):
    """Empirical CDF of ``sample`` (NaN dropped), with ``theory(x)`` as a dashed line if given."""
    ax = axes(ax)
    x = np.sort(np.asarray(sample.values, dtype=float).ravel())
    x = x[np.isfinite(x)]
    y = np.arange(1, x.size + 1) / x.size
    ax.step(x, y, where="post", label=f"{label} (n = {x.size})")
    if theory is not None:
        grid = np.linspace(x[0], x[-1], 300)
        ax.plot(grid, theory(grid), "--", label="theory")
    ax.set_xlabel(axis_label(sample))
    ax.set_ylabel("cumulative probability")
    ax.legend()
    return ax


def plot_arrhenius(mean_time, stderr, fit, dim="D", ax=None):
    """``ln <T>`` against ``1/dim`` with 1-sigma error bars and the fitted curve."""
    ax = axes(ax)
    inv = 1.0 / mean_time[dim].values
    ax.errorbar(inv, np.log(mean_time.values), yerr=(stderr / mean_time).values, fmt="o", label="simulation")
    ax.plot(inv, np.log(fit["fit"].values), "-",
            label=f"{fit.attrs['form']} fit: slope {float(fit.slope):.4g} +- {float(fit.slope_stderr):.2g}")
    ax.set_xlabel(f"1 / {dim}")
    ax.set_ylabel("ln <T>")
    ax.legend()
    return ax


#: Most curves :func:`plot_field` draws in one axes (the legend says when there are more).
MAX_CURVES = 12


#: How units spelled the CF way (``udunits``) read on an axis.
_UNIT_TEXT = {"s-1": "s\u207b\u00b9", "ohm": "\u03a9", "percent": "%", "K-1": "K\u207b\u00b9"}
#: Words of the ``time_unit`` attributes drawn as symbols.
_SYMBOLS = (("hbar", "\u0127"), ("omega", "\u03c9"))
#: Symbol of a time unit whose attribute gives no short form (the footnote says what it is).
TIME_SYMBOL = "t\u2080"
#: SI prefixes :func:`si_scale` chooses from, by power of ten.
_PREFIXES = {-15: "f", -12: "p", -9: "n", -6: "\u00b5", -3: "m", 0: "", 3: "k", 6: "M", 9: "G"}


def units_text(units) -> str:
    """How a ``units`` attribute reads on an axis: ``""`` when dimensionless (``"1"``) or absent.

    Parameters
    ----------
    units : str or None
        A CF ``units`` attribute, e.g. ``"A"``, ``"s-1"``, ``"1"``.

    Returns
    -------
    str
        The unit as drawn (``"s-1"`` reads ``"s\u207b\u00b9"``), or ``""``.
    """
    if units in (None, "", "1"):
        return ""
    return _UNIT_TEXT.get(str(units), str(units))


def time_unit_symbol(text: str) -> str:
    """A short symbol for a ``time_unit`` attribute (the unit of a dimensionless time or rate).

    ``"hbar / E_C with E_C = ...: ..."`` gives ``"\u0127/E_C"``, ``"... (time in 1 / [omega])"``
    gives ``"1/\u03c9"``; a rate's ``"per (...)"`` gives the inverse (``"E_C/\u0127"``). An attribute
    with no short form gives :data:`TIME_SYMBOL` (:func:`time_unit_note` says what it stands for).

    Parameters
    ----------
    text : str
        The ``time_unit`` attribute.

    Returns
    -------
    str
        The symbol.
    """
    text = str(text).strip()
    per = text.startswith("per (") and text.endswith(")")
    inner = text[5:-1] if per else text
    found = re.search(r"\(time in (.+)\)\s*$", inner)
    symbol = found.group(1) if found else re.split(r" with |:", inner)[0] if re.search(r" with |:", inner) else ""
    symbol = symbol.replace("[", "").replace("]", "").strip()
    if not symbol or len(symbol) > 16:
        symbol = TIME_SYMBOL
    for word, sign in _SYMBOLS:
        symbol = symbol.replace(word, sign)
    symbol = re.sub(r"\s*/\s*", "/", symbol)
    if not per:
        return symbol
    parts = symbol.split("/")
    if len(parts) == 2:
        return parts[1] if parts[0] == "1" else f"{parts[1]}/{parts[0]}"
    return f"1/{symbol}"


def time_unit_note(da) -> str | None:
    """What the time-unit symbol of ``da``'s axis label stands for, as a footnote; None without ``time_unit``.

    Parameters
    ----------
    da : xarray.DataArray
        A variable or coordinate with a ``time_unit`` attribute (and ``units: "1"``).

    Returns
    -------
    str or None
        ``"symbol: the attribute"`` (the time unit itself for a rate's ``"per (...)"``).
    """
    text = da.attrs.get("time_unit")
    if text is None or units_text(da.attrs.get("units")):
        return None
    text = str(text)
    inner = text[5:-1] if text.startswith("per (") and text.endswith(")") else text
    return f"{time_unit_symbol(inner)}: {inner}"


def axis_label(da, name=None) -> str:
    """An axis label from ``long_name`` and ``units`` (or the ``time_unit`` of a dimensionless time).

    Dimensionless units (``"1"``) are not shown, except that a ``time_unit`` attribute
    beside them is, as a symbol (:func:`time_unit_symbol`), e.g. ``"escape time [\u0127/E_C]"``.

    Parameters
    ----------
    da : xarray.DataArray
        A variable or coordinate.
    name : str, optional
        The words of the label (default: ``long_name``, else the variable's name).

    Returns
    -------
    str
        ``"long name [units]"``, or the long name (else the name) alone.
    """
    name = name or da.attrs.get("long_name", da.name)
    units = units_text(da.attrs.get("units"))
    if not units and da.attrs.get("time_unit") is not None:
        units = time_unit_symbol(da.attrs["time_unit"])
    return f"{name} [{units}]" if units else str(name)


def si_scale(values, units: str):
    """A factor and prefixed unit that bring the largest of ``values`` in ``units`` into [0.1, 100).

    Parameters
    ----------
    values : array_like
        Values in ``units`` (NaN ignored).
    units : str
        A plain SI unit such as ``"A"`` or ``"s"``; other units (``"s-1"``, ``"1"``) are kept.

    Returns
    -------
    factor : float
        What the values are multiplied by (e.g. 1e6 for microamperes).
    units : str
        The prefixed unit as drawn (e.g. ``"\u00b5A"``).
    """
    finite = np.abs(np.asarray(values, dtype=float))
    finite = finite[np.isfinite(finite) & (finite > 0)]
    if not re.fullmatch(r"[A-Za-z]+", str(units)) or units in ("ohm", "K") or finite.size == 0:
        return 1.0, units_text(units)
    power = int(np.clip(3 * np.floor((np.log10(finite.max()) + 1) / 3), min(_PREFIXES), max(_PREFIXES)))
    return 10.0**-power, _PREFIXES[power] + str(units)


def point_label(point, dims) -> str:
    """``"name = value unit, ..."`` naming one point of the swept dimensions ``dims``.

    Parameters
    ----------
    point : xarray.DataArray or xarray.Dataset
        A selection at one point of ``dims`` (their coordinates kept as scalars).
    dims : sequence of str
        The swept dimensions.

    Returns
    -------
    str
        The point, e.g. ``"sweep rate = 200 1/s, K = 4"`` (underscores of names read as spaces).
    """
    parts = []
    for d in dims:
        if d not in point.coords:
            continue
        coord = point.coords[d]
        value = coord.item()
        text = f"{value:.4g}" if isinstance(value, (int, float, np.number)) else str(value)
        units = units_text(coord.attrs.get("units"))
        parts.append(f"{str(d).replace('_', ' ')} = {text}" + (f" {units}" if units else ""))
    return ", ".join(parts)


def legend_outside(ax, where="right", **kwargs):
    """A legend beside ``ax`` (right of it, or below it), outside the axes, so that it covers no data.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes whose labelled artists are listed.
    where : {"right", "below"}
        Which side of the axes.
    **kwargs
        Passed to ``ax.legend`` (e.g. ``title``).

    Returns
    -------
    matplotlib.legend.Legend
        The legend.
    """
    side = {"right": {"loc": "upper left", "bbox_to_anchor": (1.02, 1.0)},
            "below": {"loc": "upper center", "bbox_to_anchor": (0.5, -0.2)}}[where]
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: labels[i].startswith(("theory", "fit")))  # the data first
    legend = ax.legend([handles[i] for i in order], [labels[i] for i in order],
                       **{**side, "borderaxespad": 0.0, "fontsize": "small", "title_fontsize": "small", **kwargs})
    legend.set_in_layout(False)  # the axes keep their size; :func:`save` widens the picture instead
    return legend


def footnote(fig, lines):
    """Small grey lines under the figure (e.g. what a time-unit symbol stands for); None entries are skipped.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    lines : iterable of str or None
        The notes, one a line (repeats dropped).

    Returns
    -------
    matplotlib.text.Text or None
        The note, or None when there is none.
    """
    lines = list(dict.fromkeys(line for line in lines if line))
    if not lines:
        return None
    return fig.text(0.01, 0.0, "\n".join(lines), ha="left", va="top", fontsize="x-small", color="0.35", wrap=True)


def _without_dimensionless_units(da):
    """A copy without ``units: "1"`` on it or its coordinates (xarray would label the axes ``[1]``)."""
    da = da.copy()
    for variable in (da, *(da[c] for c in da.coords)):
        if variable.attrs.get("units") == "1":
            del variable.attrs["units"]
    return da


def plot_field(field, x=None, y=None, ax=None, error=None, **kwargs):
    """Curves of ``field`` along ``x`` (with error bars), or an image over ``(x, y)``.

    ``x`` defaults to the first dimension. Curves: one per combination of the other
    dimensions (the first :data:`MAX_CURVES`; the legend says how many there are), with
    ``error`` (a DataArray like ``field``, e.g. the standard error) as error bars. Image:
    the other dimensions are shown at their first index (named in the title).

    Parameters
    ----------
    field : xarray.DataArray
        The values.
    x, y : str, optional
        The dimensions along the axes.
    ax : matplotlib.axes.Axes, optional
        Where to draw.
    error : xarray.DataArray, optional
        One standard error of ``field`` (curves only).
    **kwargs
        Passed to matplotlib (``errorbar`` for curves, xarray's ``plot`` for images).

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn into.
    """
    ax = axes(ax)
    x = x or field.dims[0]
    if y is not None:
        field = field.isel({d: 0 for d in field.dims if d not in (x, y)})
        image = _without_dimensionless_units(field).transpose(y, x).plot(ax=ax, x=x, y=y, **kwargs)
        ax.set_xlabel(axis_label(field[x]) if x in field.coords else x)
        ax.set_ylabel(axis_label(field[y]) if y in field.coords else y)
        if getattr(image, "colorbar", None) is not None:
            image.colorbar.set_label(axis_label(field))
        return ax
    others = [d for d in field.dims if d != x]
    points = list(np.ndindex(*(field.sizes[d] for d in others)))
    abscissa = field[x] if x in field.coords else np.arange(field.sizes[x])
    for point in points[:MAX_CURVES]:
        where = dict(zip(others, point))
        curve = field.isel(where)
        text = ", ".join(filter(None, [point_label(curve, [d for d in others if d in curve.coords])]
                                + [f"{d} {i}" for d, i in where.items() if d not in curve.coords]))
        ax.errorbar(np.asarray(abscissa), curve.values, yerr=None if error is None else error.isel(where).values,
                    marker="o" if field.sizes[x] < 30 else None, capsize=2 if error is not None else 0,
                    label=text or None, **kwargs)
    ax.set_xlabel(axis_label(field[x]) if x in field.coords else x)
    ax.set_ylabel(axis_label(field))
    if len(points) > 1:
        title = f"first {MAX_CURVES} of {len(points)} curves" if len(points) > MAX_CURVES else None
        legend_outside(ax, title=title)
    return ax


def save(ax, path, dpi=120):
    """Write the figure of ``ax`` to ``path`` and close it.

    The saved area grows to hold what lies outside the axes (a legend beside them, a footnote).
    A figure with a layout engine of its own (``layout="constrained"``) keeps it.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Any axes of the figure.
    path : str or path-like
        The PNG file.
    dpi : int
        Resolution.
    """
    import matplotlib.pyplot as plt

    fig = ax.figure
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    outside = [a.get_legend() for a in fig.axes if a.get_legend() is not None] + list(fig.texts)
    fig.savefig(path, dpi=dpi, bbox_inches="tight", bbox_extra_artists=outside, pad_inches=0.15)
    plt.close(fig)
