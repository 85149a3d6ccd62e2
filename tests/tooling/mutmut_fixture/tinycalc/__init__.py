"""A package for mutmut to mutate."""
