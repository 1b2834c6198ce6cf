"""A tiny inventory library: the sample project that coverage-mcp's demo ships."""

from .pricing import bulk_discount, price_with_tax
from .stock import Stock, restock_plan

__all__ = ["Stock", "bulk_discount", "price_with_tax", "restock_plan"]
