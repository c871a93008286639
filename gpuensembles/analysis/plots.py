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
    ax.set_xlabel(f"{sample.attrs.get('long_name', sample.name)} [{sample.attrs.get('units', '1')}]")
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


def plot_field(field, x=None, y=None, ax=None, **kwargs):
    """A line of ``field`` along ``x``, or an image over ``(x, y)``.

    ``x`` defaults to the first dimension; every other dimension is shown at its first index.
    """
    ax = axes(ax)
    x = x or field.dims[0]
    field = field.isel({d: 0 for d in field.dims if d not in (x, y)})
    if y is None:
        field.plot.line(ax=ax, x=x, marker="o" if field.size < 30 else None, **kwargs)
    else:
        field.transpose(y, x).plot(ax=ax, x=x, y=y, **kwargs)
    return ax


def save(ax, path, dpi=120):
    """Write the figure of ``ax`` to ``path`` and close it."""
    import matplotlib.pyplot as plt

    ax.figure.tight_layout()
    ax.figure.savefig(path, dpi=dpi)
    plt.close(ax.figure)
