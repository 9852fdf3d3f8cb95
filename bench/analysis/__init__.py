"""From run records to numbers: metrics, cost, statistics, comparison, regression verdicts, advice."""
