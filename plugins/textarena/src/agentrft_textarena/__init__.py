"""TextArena's single-player games as agentrft tasks."""
