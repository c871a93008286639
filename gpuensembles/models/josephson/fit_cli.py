"""Subcommand ``fit``: a measured switching histogram (CSV or TSV) in, the junction's parameters and a PNG out.

The file holds either switching currents, one per line, or with ``--counts`` bins as
``lower, upper, count`` per line; an optional last column ``temperature`` groups the lines into
one histogram per bath temperature. Columns are separated by commas, tabs or spaces; a first
line that is not numbers is a header and skipped; ``#`` starts a comment.
"""

import io
import math

import numpy as np

from .fitting import MODELS, UNITS, fit_switching


def add_arguments(parser):
    """The options of ``gpuensembles fit``."""
    parser.add_argument("data", help="CSV/TSV file: switching currents (one per line), or with --counts, lines of "
                                     "'lower, upper, count'; an optional last column is the bath temperature")
    parser.add_argument("--counts", action="store_true", help="the file holds bins with counts, not currents")
    parser.add_argument("--sweep-rate", type=float, required=True,
                        help="dI/dt: A/s with --units A; I_c per time unit hbar/E_C with --units 1")
    parser.add_argument("--units", choices=UNITS, default="A", help="currents in amperes (default) or in I_c")
    parser.add_argument("--C", type=float, help="capacitance in F (--units A)")
    parser.add_argument("--R", type=float, help="shunt resistance in ohm (--units A)")
    parser.add_argument("--V0", type=float, help="E_J / E_C at the nominal critical current (--units 1)")
    parser.add_argument("--damping", type=float, help="1 / (R C) in the time unit hbar / E_C (--units 1)")
    parser.add_argument("--model", choices=MODELS, default="thermal")
    parser.add_argument("--fit-damping", action="store_true", help="fit the damping too (thermal and quantum)")
    parser.add_argument("--criterion", choices=("escape", "voltage"), default="escape",
                        help="what the simulated model counts as a switch")
    parser.add_argument("--ramp-start", type=float, help="current at which each ramp starts (units of the data)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulated model")
    parser.add_argument("--backend", choices=("auto", "cuda", "cpu"), default="auto")
    parser.add_argument("-o", "--output", required=True, help="NetCDF file of the fit")
    parser.add_argument("--plot", dest="plot_path", metavar="PNG", help="draw the fit into this PNG file")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output or plot file")
    parser.set_defaults(cluster=False, progress=False)


def read_table(path) -> np.ndarray:
    """The numbers of a CSV, TSV or space-separated file as a 2-D array (header and comments skipped).

    Raises
    ------
    ValueError
        Naming the file and the line that is not numbers, or rows of unequal length.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError as err:
        raise ValueError(f"data: cannot read {path!r} ({err.strerror})") from None
    rows, first = [], True
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        fields = [f for f in text.replace(",", " ").replace(";", " ").split()]
        try:
            rows.append([float(f) for f in fields])
        except ValueError:
            if first:  # a header
                first = False
                continue
            raise ValueError(f"data: line {number} of {path} is not numbers: {line!r}") from None
        first = False
    if not rows:
        raise ValueError(f"data: {path} holds no numbers")
    if len({len(r) for r in rows}) != 1:
        raise ValueError(f"data: the lines of {path} have different numbers of columns")
    return np.asarray(rows)


def _grouped(table, counts):
    """``(kwargs of fit_switching, temperatures or None)`` from the table's columns."""
    width = 3 if counts else 1
    if table.shape[1] not in (width, width + 1):
        what = "'lower, upper, count'" if counts else "one current"
        raise ValueError(f"data: each line must hold {what}, optionally followed by a temperature; "
                         f"got {table.shape[1]} columns")
    temps = np.unique(table[:, width]) if table.shape[1] == width + 1 else None
    groups = [table] if temps is None else [table[table[:, width] == t] for t in temps]
    if not counts:
        if len({len(g) for g in groups}) > 1:  # NaN padding would read as ramps that never switched
            raise ValueError("data: every temperature must have the same number of switching currents in this file "
                             "format (use --counts for histograms of different sizes)")
        data = np.stack([g[:, 0] for g in groups])
        return {"data": data if temps is not None else data[0]}, temps
    edges = np.concatenate([groups[0][:, 0], groups[0][-1:, 1]])
    for g in groups:
        if not (np.array_equal(g[:, 0], edges[:-1]) and np.array_equal(g[:, 1], edges[1:])):
            raise ValueError("data: the bins must be the same at every temperature, each line's lower edge the "
                             "previous line's upper edge (sorted, not overlapping)")
    return {"counts": np.stack([g[:, 2] for g in groups]) if temps is not None else groups[0][:, 2],
            "edges": edges}, temps


def run(args):
    """Read the file and fit it (:func:`fit_switching`)."""
    table = read_table(args.data)
    given, temps = _grouped(table, args.counts)
    return fit_switching(**given, sweep_rate=args.sweep_rate, model=args.model, units=args.units, V0=args.V0,
                         damping=args.damping, C=args.C, R=args.R, temperature=temps, ramp_start=args.ramp_start,
                         fit_damping=args.fit_damping, criterion=args.criterion, seed=args.seed, backend=args.backend)


def _row(ds, name, unit):
    value, error = float(ds[name]), float(ds[f"{name}_stderr"])
    spread = f" +- {error:.2g}" if math.isfinite(error) else ""
    return f"{name:>6} = {value:.6g}{spread} {unit}"


def summary(ds, seconds, output):
    """Print the fitted parameters, per temperature, and the goodness of fit."""
    out = io.StringIO()
    units = ds["Ic"].attrs["units"], ds["T_esc"].attrs["units"]
    points = [ds] if "temperature" not in ds.dims else [ds.isel(temperature=i) for i in range(ds.sizes["temperature"])]
    print(f"fit ({ds.attrs['model']} model; fitted {ds.attrs['fitted']}) in {float(seconds):.2f} s -> {output}",
          file=out)
    for point in points:
        if "temperature" in point.coords:
            print(f"T = {float(point.temperature):.6g} {units[1]}:", file=out)
        for name, unit in (("Ic", units[0]), ("T_esc", units[1]), ("Q", ""), ("T_star", units[1])):
            print("  " + _row(point, name, unit), file=out)
        print(f"  chi2 = {float(point.chi2):.1f} for {int(point.dof)} dof (p = {float(point.p_value):.3g}), "
              f"{int(point.events)} events", file=out)
    print(out.getvalue(), end="")


def plot(ds, path):
    """The data's and the fitted switching CDFs; with temperatures, also ``T_esc(T)`` with ``T*``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    several = "temperature" in ds.dims
    fig, axes = plt.subplots(1, 2 if several else 1, figsize=(11 if several else 6, 4.2), squeeze=False)
    ax = axes[0, 0]
    points = [ds.isel(temperature=i) for i in range(ds.sizes["temperature"])] if several else [ds]
    for point in points:
        label = f"T = {float(point.temperature):.3g}" if several else "data"
        line, = ax.plot(point.current, point.empirical_cdf, ".", ms=3, label=label)
        ax.plot(point.current, point.model_cdf, "-", color=line.get_color(), lw=1)
    ax.set(xlabel=f"switching current ({ds['Ic'].attrs['units']})", ylabel="switching probability",
           title=f"{ds.attrs['model']} fit (lines) to the data (dots)")
    ax.legend(fontsize=7)
    if several:
        ax = axes[0, 1]
        T = ds.temperature.values
        ax.errorbar(T, ds.T_esc, yerr=ds.T_esc_stderr, fmt="o", label="T_esc (fit)")
        ax.plot(T, T, "k--", lw=1, label="T_esc = T")
        ax.axvline(float(ds.T_star.median()), color="r", lw=1, label="T* (crossover)")
        unit = ds["T_esc"].attrs["units"]
        ax.set(xlabel=f"bath temperature ({unit})", ylabel=f"escape temperature ({unit})", title="T_esc(T)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
