from tinycalc.ops import is_adult


def test_is_adult() -> None:
    assert is_adult(30)
    assert not is_adult(5)
