"""Learning curves from the store: episode series, smoothing, sparklines, plots and exports.

Pure functions over the rows of :mod:`palaestra.store.rows` (no pandas): :mod:`.series` builds
episode-reward and statistic series per run and agent in time order, :mod:`.bands` combines
runs (a sweep over seeds) into a mean and a spread, :mod:`.trend` draws series as
unicode sparklines, :mod:`.plot` as a PNG (``palaestra[plot]``), and :mod:`.tensorboard` and
:mod:`.mlflow` export them (``palaestra[tensorboard]``, ``palaestra[mlflow]``). The command line
(``palaestra plot``, ``palaestra export``) is a thin layer over these.
"""
