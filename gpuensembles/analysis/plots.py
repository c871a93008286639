"""Matplotlib figures (matplotlib is imported only here, lazily)."""

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


def axis_label(da) -> str:
    """An axis label from ``long_name`` and ``units``; dimensionless units (``"1"``) are not shown.

    Parameters
    ----------
    da : xarray.DataArray
        A variable or coordinate.

    Returns
    -------
    str
        ``"long name [units]"``, or the long name (else the name) alone.
    """
    name = da.attrs.get("long_name", da.name)
    units = da.attrs.get("units")
    return f"{name} [{units}]" if units not in (None, "", "1") else str(name)


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
        field = _without_dimensionless_units(field.isel({d: 0 for d in field.dims if d not in (x, y)}))
        field.transpose(y, x).plot(ax=ax, x=x, y=y, **kwargs)
        return ax
    others = [d for d in field.dims if d != x]
    points = list(np.ndindex(*(field.sizes[d] for d in others)))
    abscissa = field[x] if x in field.coords else np.arange(field.sizes[x])
    for point in points[:MAX_CURVES]:
        where = dict(zip(others, point))
        curve = field.isel(where)
        text = ", ".join(f"{d}={curve[d].item():.4g}" if d in curve.coords else f"{d}={i}" for d, i in where.items())
        ax.errorbar(np.asarray(abscissa), curve.values, yerr=None if error is None else error.isel(where).values,
                    marker="o" if field.sizes[x] < 30 else None, capsize=2 if error is not None else 0,
                    label=text or None, **kwargs)
    ax.set_xlabel(axis_label(field[x]) if x in field.coords else x)
    ax.set_ylabel(axis_label(field))
    if len(points) > 1:
        title = f"first {MAX_CURVES} of {len(points)} curves" if len(points) > MAX_CURVES else None
        ax.legend(fontsize="small", title=title)
    return ax


def save(ax, path, dpi=120):
    """Write the figure of ``ax`` to ``path`` and close it."""
    import matplotlib.pyplot as plt

    ax.figure.tight_layout()
    ax.figure.savefig(path, dpi=dpi)
    plt.close(ax.figure)
