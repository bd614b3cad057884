"""What `--help` shows in its type column.

typer (0.29) prints `<bool>` beside every on/off flag (`--dry-run <bool>`), as if the flag
took a value; `--dry-run true` is then an error. A flag takes none, so its type column is
left empty. typer builds its option objects itself (no class to pass in), so the one method
that renders the column is wrapped, once, when the CLI module is imported.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperOption

_MARK = "_agentrft_hides_flag_types"


def hide_flag_types() -> None:
    """Show no type for flags (options that take no value); idempotent."""
    original = TyperOption.display_type_rich
    if getattr(original, _MARK, False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        if self.is_flag and not self.count and self.metavar is None:
            return None
        return original(self, ctx)

    setattr(display_type_rich, _MARK, True)
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]
