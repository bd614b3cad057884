"""Built-in backends (registered through the `agentrft` entry-point group like any plugin)."""
