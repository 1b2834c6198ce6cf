from inventory import bulk_discount, price_with_tax


def test_standard_tax():
    assert price_with_tax(10) == 12.0


def test_bulk_discount_small_order():
    assert bulk_discount(2.0, 3) == 6.0
