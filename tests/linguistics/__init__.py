"""The linguistic measurements (npbert/linguistics): attention heads, probes, minimal pairs, the
pseudo-log-likelihood, the counting baselines and their commands."""
