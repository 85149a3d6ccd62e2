"""Two functions: ``add``, which its test pins, and ``is_adult``, whose boundary its test leaves open."""


def add(a: int, b: int) -> int:
    return a + b


def is_adult(age: int) -> bool:
    return age >= 18
