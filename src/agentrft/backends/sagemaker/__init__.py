"""The sagemaker backend. Importing this package must stay cheap (no torch / SDK imports)."""
