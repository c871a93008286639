"""Subcommand ``xorsat``."""

import numpy as np

from ...core import commands
from ...core.commands import add_parameter, integer, values
from ...core.validation import check_count
from .instances import load_instance, random_instances
from .run import DEFAULT_CLONES, solve


def add_arguments(parser):
    """Options of ``xorsat``."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--N", type=integer, nargs="+", help="sizes of random instances (variables)")
    source.add_argument("--instance-file", metavar="FILE", help="an instance (.nc, or XOR-clause text .xnf/.cnf)")
    parser.add_argument("--instances", type=integer, default=1, help="random instances per size")
    parser.add_argument("--instance-seed", type=integer, default=0, help="seed of the random instances")
    add_parameter(parser, "p", "flip probability of a variable in one unsatisfied triplet", default=[0.1])
    parser.add_argument("--clones", type=integer, default=DEFAULT_CLONES, help="clones per run")
    parser.add_argument("--runs", type=integer, default=1, help="independent runs per instance")
    parser.add_argument("--timeout", type=integer, help="sweeps after which a run gives up (default: none)")
    commands.add_run_options(parser, "runs")


def run(args):
    """Run ``xorsat``."""
    if args.instance_file:
        try:
            instances = load_instance(args.instance_file)
        except ValueError as err:
            raise ValueError(f"--instance-file: {err}") from None
    else:
        count = check_count("--instances", args.instances)
        seed = check_count("--instance-seed", args.instance_seed, minimum=0, maximum=2**32 - 1)
        instances = random_instances(values(args.N), count, seed=seed)
    return solve(instances, p=values(args.p), clones=args.clones, timeout=args.timeout, runs=args.runs,
                 **commands.run_options(args))


def summary(ds, seconds, output):
    """Spin updates and rate, then tau with its interval per size, instance and p."""
    updates = float((ds.tts_sweeps * ds.N).sum()) * int(ds.attrs["clones"])  # N: a dimension or a scalar
    commands.header(ds, seconds, updates, "spin updates", output)
    tau = ds.tts.mean().rename(tau="tau (s)", lower="lower", upper="upper")[["tau (s)", "lower", "upper", "solved",
                                                                           "runs"]]
    tau["tau (sweeps)"] = ds.tts.mean(time="sweeps").tau
    commands.print_table(tau, digits=4)


def plot(ds, path):
    """Survival of the run times against the exponential law (Bernaschi et al. 2021, Fig. 2), legend beside it."""
    commands.use_agg()
    import matplotlib.pyplot as plt

    from ...analysis.plots import save

    ax = ds.tts.plot_survival(time="sweeps", ax=plt.subplots(figsize=(6.4, 4.4))[1])
    p = np.atleast_1d(ds["p"].values)
    ax.set_title(f"Time to solution of random 3-XORSAT instances, quasi-greedy search\n"
                 f"{int(ds.attrs['clones'])} clones, p = {', '.join(f'{v:g}' for v in p)}", fontsize="medium")
    save(ax, path)
