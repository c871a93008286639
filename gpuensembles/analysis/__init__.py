"""Model-agnostic analysis: statistics with errors, first-passage statistics, plots.

Nothing here knows a model; the family accessors (``.fpt``, ``.ising``, ``.langevin``,
``.tts``) live in each family's ``analysis.py`` and delegate to these functions.
"""
