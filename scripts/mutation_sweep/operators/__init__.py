"""The sweep's mutation operators, one module each; ``ALL`` is the order they are applied in."""

from __future__ import annotations

from types import ModuleType

from . import (
    comparison,
    delete_statement,
    drop_element,
    except_clause,
    keep_cache,
    keyword_only,
    remove_base,
    remove_handler,
    remove_normaliser,
    replace_value,
    swap_arguments,
    swap_statements,
    swap_variable,
    unwrap_call,
)

ALL: tuple[ModuleType, ...] = (
    delete_statement,
    unwrap_call,
    drop_element,
    replace_value,
    comparison,
    remove_base,
    keyword_only,
    remove_handler,
    except_clause,
    swap_arguments,
    remove_normaliser,
    swap_statements,
    swap_variable,
    keep_cache,
)

__all__ = ["ALL"]
