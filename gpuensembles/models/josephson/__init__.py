"""Josephson junctions (Pierro et al. 2018): escape times, switching and retrapping currents, escape rates.

:func:`escape_times`, :func:`switching_currents` and :func:`retrapping_currents` integrate
the washboard Langevin equation of :mod:`.physics` and :mod:`.running_physics` on the
generic first-passage template; :func:`escape_rates` measures rates by forward flux
sampling, and ``switching_currents(method="rates")`` builds switching histograms at real
sweep rates from them. :mod:`.theory` holds the exact overdamped MFPT, the Kramers and
Mel'nikov rates, Fulton-Dunkleberger and the retrapping current; :mod:`.analysis`
registers the ``Dataset.fpt`` accessor; :func:`normalize` converts SI junction parameters.
:func:`rates_from_histogram` and :func:`fit_switching` go the other way, from measured
switching histograms to rates and to the junction's parameters.
"""

from ...core.registry import Command, RunFunction, register, register_analysis
from . import analysis, cli, fit_cli, theory  # noqa: F401  (analysis registers the Dataset.fpt accessor)
from .escape import escape_times
from .fitting import fit_switching
from .histograms import rates_from_histogram
from .junction import normalize
from .rates import escape_rates
from .retrapping import retrapping_currents
from .switching import switching_currents

__all__ = ["escape_times", "switching_currents", "escape_rates", "retrapping_currents", "normalize", "theory",
           "rates_from_histogram", "fit_switching"]

register(RunFunction(
    name="escape_times", function=escape_times, family="josephson",
    command=Command("escape-times", "escape times of a Josephson junction (washboard Langevin model)",
                    cli.add_escape_times, cli.run_escape_times, cli.summary, cli.plot),
    example=lambda: dict(damping=0.5, gamma=0.5, D=[0.3, 0.5], h=0.01, realizations=8, max_steps=20_000, seed=1),
    example_chunks=3,
))
register(RunFunction(
    name="switching_currents", function=switching_currents, family="josephson",
    command=Command("switching-currents", "switching currents under a bias ramp (normalized or SI units)",
                    cli.add_switching_currents, cli.run_switching_currents, cli.summary, cli.plot),
    example=lambda: dict(damping=0.5, D=0.05, dgamma=2e-4, h=0.01, realizations=8, seed=1),
    example_chunks=3,
))
register(RunFunction(
    name="escape_rates", function=escape_rates, family="josephson",
    command=Command("escape-rates", "escape rates over many decades (direct, or forward flux sampling)",
                    cli.add_escape_rates, cli.run_escape_rates, cli.rates_summary, cli.rates_plot),
    example=lambda: dict(model="overdamped", damping=1.0, gamma=[0.3, 0.5], D=0.06, h=0.05, rel_error=0.3, seed=1),
    example_chunks=1,
))
register(RunFunction(
    name="retrapping_currents", function=retrapping_currents, family="josephson",
    command=Command("retrapping-currents", "retrapping currents: the bias ramped down from the running state",
                    cli.add_retrapping_currents, cli.run_retrapping_currents, cli.summary, cli.plot),
    example=lambda: dict(damping=0.3, D=0.003, dgamma=2e-4, h=0.05, gamma_start=0.8, realizations=8, seed=1),
    example_chunks=3,
))
register_analysis(Command("fit", "fit Ic, the escape temperature and the damping to a measured switching histogram "
                           "(CSV/TSV)", fit_cli.add_arguments, fit_cli.run, fit_cli.summary, fit_cli.plot),
                   fit_switching)
