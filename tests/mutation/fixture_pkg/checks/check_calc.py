from tinypkg.calc import Counter, clamp


def test_clamp() -> None:
    assert clamp(5, 0, 10) == 5
    assert clamp(-1, 0, 10) == 0
    assert clamp(11, 0, 10) == 10


def test_bump() -> None:
    counter = Counter()
    assert counter.bump() >= 1
