from inventory import Stock, restock_plan


def test_add_and_count():
    s = Stock()
    s.add("apple", 3)
    assert s.count("apple") == 3


def test_remove_some():
    s = Stock()
    s.add("pear", 5)
    s.remove("pear", 2)
    assert s.count("pear") == 3


def test_restock_plan_lists_low_items():
    s = Stock()
    s.add("fig", 1)
    assert restock_plan(s, 4) == {"fig": 3}
