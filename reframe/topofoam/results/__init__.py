"""The results layer every tool shares: reading perflogs (``perflog``), the one rule that
merges repeats (``merge``), and what the stages decide and start from (``stages``).

The report (``topofoam.reporting``), the tuning file (``topofoam.tuning``), the performance
references (``topofoam.references``) and the latency table (``topofoam.p2p``) read runs only
through here, so they agree on which rows count and on what a configuration's value is.
"""
