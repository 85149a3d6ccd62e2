"""guard_lib's behaviour tests, run on both implementations."""
