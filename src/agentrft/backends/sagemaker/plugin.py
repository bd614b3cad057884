"""Plugin registration for the sagemaker backend (hooks are added as the backend lands)."""
