"""The results layer every tool shares: reading perflogs (``perflog``), the one rule that
merges repeats (``merge``), and what the stages decide and start from (``stages``); and what
is made from runs through it: the tuning file (``tuning``), the performance references
(``references``), the latency table (``p2p``), what a resumed run must rerun (``resume``) and
the final fields compared (``fields``).

The report (``topofoam.reporting``) and the validation read runs only through here too, so
they agree on which rows count and on what a configuration's value is.
"""
