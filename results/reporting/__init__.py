"""The results of the suite: perflogs and run reports collected into one tidy table per site,
and the cost-performance report written from it (``python -m reporting``)."""
