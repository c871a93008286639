"""The project's performance history: a few calls asv measures at each commit (see ``default_calls``)."""
