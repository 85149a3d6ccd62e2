"""How mutants are run: a warm process forks one child per mutant."""
