"""Plugin registration for the local backend (hooks are added as the backend lands)."""
