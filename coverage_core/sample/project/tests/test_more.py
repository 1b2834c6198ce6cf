import pytest
from inventory import Stock, bulk_discount, price_with_tax


def test_remove_everything_forgets_the_item():
    s = Stock()
    s.add("kiwi", 2)
    s.remove("kiwi", 2)
    assert s.names() == []


def test_unknown_band_is_refused():
    with pytest.raises(ValueError):
        price_with_tax(1, "luxury")


def test_large_order_discount():
    assert bulk_discount(1.0, 100) == 85.0
