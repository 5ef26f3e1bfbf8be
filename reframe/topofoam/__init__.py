"""The suite's library, one package per concern (docs/development.md, "The library"):

- ``checks``: what the ReFrame checks use to build, place, run and sanity-check (the only
  part that imports ReFrame);
- ``config``: what a site declares and what may vary: settings, presets, fabric profiles,
  the sweep space;
- ``jobs``: the commands a job script runs on a node (``python -m topofoam.jobs.X``) and
  the readers of what they write;
- ``results``: perflogs, their merge and statistics, and the files made from them;
- ``prediction``: the communication model, its check against runs, and the planner;
- ``reporting``, ``validation``: the report and the verdict.

``paths`` (the repository's and the cache's folders) and ``contents`` (what a cache entry
held) are leaves every part may use.
"""
