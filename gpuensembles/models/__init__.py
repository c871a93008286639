"""Model families, one package each, all of the same shape.

Each family (``josephson``, ``langevin``, ``kuramoto``, ``ising``, ``xorsat``, ``mcls``)
holds ``physics.py`` (scalar ``numba.jit`` functions shared by CPU and CUDA), a
``kernels.py`` only where no generic template of :mod:`gpuensembles.core.templates`
fits, ``run.py`` (the public run functions), ``theory.py`` (exact and analytic
references), ``analysis.py`` (analysis functions and the thin ``Dataset`` accessor) and
``cli.py`` (its command-line subcommands). A family that grows splits ``run.py`` by
capability, with what the capabilities share in a module of its own (``josephson``:
``junction.py``, ``escape.py``, ``switching.py``, ``rates.py``, ...). A family imports the core and the generic
:mod:`gpuensembles.analysis`, never another family; the import contract in
``pyproject.toml`` checks that in CI.
"""
