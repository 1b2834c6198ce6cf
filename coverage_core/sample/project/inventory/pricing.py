"""Prices, taxes and discounts."""

TAX_RATES = {"standard": 0.2, "reduced": 0.05, "zero": 0.0}


def price_with_tax(net, band="standard"):
    if band not in TAX_RATES:
        raise ValueError(f"unknown tax band {band!r}")
    return round(net * (1 + TAX_RATES[band]), 2)


def bulk_discount(unit_price, quantity):
    if quantity >= 100:
        rate = 0.15
    elif quantity >= 20:
        rate = 0.05
    else:
        rate = 0.0
    total = unit_price * quantity
    return round(total * (1 - rate), 2)


def format_price(amount, currency="EUR"):
    symbol = {"EUR": "€", "USD": "$"}.get(currency)
    if symbol is None:
        return f"{amount:.2f} {currency}"
    return f"{symbol}{amount:.2f}"
