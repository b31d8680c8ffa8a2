"""The feedback loop: the query log of routed and answered questions, and its report."""
