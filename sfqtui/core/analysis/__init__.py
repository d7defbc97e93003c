"""What is computed from a log: the audit, fairness figures, gaps, explanations and shares."""
