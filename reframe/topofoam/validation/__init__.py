"""A system's validation verdict (``-t validate``): sessions from ReFrame's results store,
expectations per site, the judgement with false alarms controlled, regressions between
sessions, and the verdict as text, JSON and JUnit XML. ``python -m topofoam.validation``."""
