"""Leader-election timings for the tests: short, but in the production ratios."""

DURATION = 2.0  # leaseDurationSeconds
RENEW = 1.5  # renewDeadlineSeconds
RETRY = 0.25  # retryPeriodSeconds
