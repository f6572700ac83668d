"""Quality gates: expectation suites (data in checks/), data-quality metrics, reports."""
