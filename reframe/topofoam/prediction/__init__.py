"""What a run would cost before it is submitted: the communication model, its check against
measured runs (``modelcheck``), the per-level link costs, and the planner (jobs, node-hours)."""
