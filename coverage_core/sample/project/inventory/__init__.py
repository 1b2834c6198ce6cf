"""A tiny inventory library: the sample project that coverage-mcp's demo ships."""

from .stock import Stock, restock_plan
from .pricing import price_with_tax, bulk_discount

__all__ = ["Stock", "restock_plan", "price_with_tax", "bulk_discount"]
