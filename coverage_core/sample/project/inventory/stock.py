"""Stock levels of a small shop."""


class Stock:
    def __init__(self):
        self._items = {}

    def add(self, name, quantity):
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        self._items[name] = self._items.get(name, 0) + quantity

    def remove(self, name, quantity):
        have = self._items.get(name, 0)
        if quantity > have:
            raise KeyError(f"only {have} of {name} in stock")
        if quantity == have:
            del self._items[name]
        else:
            self._items[name] = have - quantity

    def count(self, name):
        return self._items.get(name, 0)

    def names(self):
        return sorted(self._items)


def restock_plan(stock, minimum):
    plan = {}
    for name in stock.names():
        have = stock.count(name)
        if have < minimum:
            plan[name] = minimum - have
    if not plan:
        return None
    return plan
