"""Catalog tools: product search, a product with its variants, categories, stock."""

from __future__ import annotations

import random
from collections.abc import Sequence
from decimal import Decimal
from typing import Any, Literal

from prove_gym.server import InvalidArgument, ToolContext, search_pattern
from prove_gym.server.tool import tool

from ..models import CATEGORIES, ZERO, availability
from ._common import _now
from .args import Category, Limit, Price, ProductRow, Quantity, SearchText, VariantIds
from .queries import (
    ACTIVE_CATEGORY_COUPONS,
    PRODUCT_NAME,
    PRODUCT_WORDS,
    PRODUCTS,
    VARIANTS,
    VARIANTS_OF,
    VARIANTS_OF_PRODUCTS,
    _products_matching,
)
from .results import (
    AvailabilityList,
    AvailabilityOut,
    CategoryList,
    CategoryOut,
    ProductDetail,
    ProductSearch,
    ProductSummary,
    VariantOut,
)


def _variant_out(v: Any) -> VariantOut:
    return {
        "variant_id": v.id,
        "sku": v.sku,
        "label": v.label,
        "price": v.price,
        "stock": v.stock,
        "availability": availability(v.stock),
    }


def _summary(p: Any, variants: Sequence[Any]) -> ProductSummary:
    """A product with its ``variants`` (by id)."""
    prices = [v.price for v in variants]
    return {
        "product_id": p.id,
        "name": p.name,
        "brand": p.brand,
        "category": p.category,
        "price_from": min(prices, default=ZERO),
        "price_to": max(prices, default=ZERO),
        "in_stock": any(v.stock > 0 for v in variants),
        "variant_ids": [v.id for v in variants],
    }


SUFFIXES = frozenset({"Pro", "Plus", "Lite", "Max", "II", "Set"})


def _product_word(ctx: ToolContext, rng: random.Random) -> str:
    """A word a shopper would search for: one of a product's item words, not its brand."""
    rows = ctx.sql.all(PRODUCT_WORDS)
    name, brand = rows[rng.randrange(len(rows))]
    words = [
        w
        for w in name.removeprefix(brand).split()
        if len(w) > 3 and w[0].isalpha() and w not in SUFFIXES
    ]
    return words[-1] if words else name


@tool(
    returns=("product", "variant", "category"),
    phrasings=[
        "Find {query} products",
        "Show me {category} items between {min_price} and {max_price}",
        "Search the catalog for {query} in {category}",
        "Which {query} products cost at most {max_price}?",
    ],
    examples={
        "query": _product_word,
        "min_price": [10, 20, 50],
        "max_price": [50, 100, 200, 500],
    },
)
def search_products(
    ctx: ToolContext,
    query: SearchText | None = None,
    category: Category | None = None,
    min_price: Price | None = None,
    max_price: Price | None = None,
    in_stock_only: bool = False,
    sort: Literal["name", "price_low_to_high", "price_high_to_low"] = "name",
    limit: Limit = 10,
) -> ProductSearch:
    """Search the catalog by words, category, price range and stock; at most `limit` results.

    A product matches a price range when one of its variants is priced inside it.

    Args:
        query: Case-insensitive words in the product name, brand or description, or a product
            id, such as "headphones", "Sonara" or "prd_0042"; leave it out to browse.
        category: Only this category, such as "kitchen" or "shoes" (see list_categories).
        min_price: Lowest variant price to include, such as 20 or "19.99".
        max_price: Highest variant price to include, such as 100 or "149.99".
        in_stock_only: Only products with at least one variant in stock, such as true.
        sort: "name" (default), "price_low_to_high" or "price_high_to_low".
        limit: Maximum number of products to return (1-50), such as 10.

    Returns:
        {"total": 14, "products": [{"product_id": "prd_0042", "name": "Sonara Wireless
        Earbuds", "category": "electronics", "price_from": "59.99", "price_to": "59.99",
        "in_stock": true, "variant_ids": ["var_00101", "var_00102"]}, ...]}; total counts
        every match.
    """
    text = (query or "").strip()
    params: dict[str, Any] = {}
    if text:
        params["pattern"] = search_pattern(text)
    if category is not None:
        params["category"] = category
    low, high = min_price, max_price
    if low is not None and high is not None and low > high:
        raise InvalidArgument(
            f"min_price {low} is above max_price {high}; give the lower bound as min_price."
        )
    products = ctx.sql.all(_products_matching(bool(text), category is not None), **params)
    ctx.spend(len(products), "products", hint="add words to query or pick a category")
    variants: dict[str, list[Any]] = {p.id: [] for p in products}
    for v in ctx.sql.all(VARIANTS_OF_PRODUCTS, product_ids=list(variants)):
        variants[v.product_id].append(v)
    found: list[tuple[Any, Decimal]] = []
    for p in products:
        prices = [
            v.price
            for v in variants[p.id]
            if (low is None or v.price >= low)
            and (high is None or v.price <= high)
            and (not in_stock_only or v.stock > 0)
        ]
        if prices:
            found.append((p, min(prices)))
    if sort == "price_low_to_high":
        found.sort(key=lambda pair: (pair[1], pair[0].name, pair[0].id))
    elif sort == "price_high_to_low":
        found.sort(key=lambda pair: (-pair[1], pair[0].name, pair[0].id))
    return {
        "total": len(found),
        "products": [_summary(p, variants[p.id]) for p, _ in found[:limit]],
    }


@tool(
    stands_in_for=("check_availability",),
    returns=("product", "variant", "category"),
    phrasings=[
        "Show me product {product_id}",
        "Which sizes and colours does {product_id} come in?",
    ],
)
def get_product(ctx: ToolContext, product_id: ProductRow) -> ProductDetail:
    """Get one product with every variant's price, stock and availability.

    Args:
        product_id: The product, such as "prd_0042" (search_products finds it by name).

    Returns:
        {"product_id": "prd_0042", "name": "Northway Rain Jacket", "category": "clothing",
        "description": "...", "variants": [{"variant_id": "var_00117", "sku":
        "NRJ-00117", "label": "Navy / M", "price": "129.99", "stock": 3, "availability":
        "low_stock"}, ...]}; availability is "in_stock", "low_stock" (under 5) or
        "out_of_stock".
    """
    p = product_id
    variants = ctx.sql.all(VARIANTS_OF, product_id=p.id)
    summary = _summary(p, variants)
    return {
        "product_id": p.id,
        "name": p.name,
        "brand": p.brand,
        "category": p.category,
        "description": p.description,
        "price_from": summary["price_from"],
        "price_to": summary["price_to"],
        "variants": [_variant_out(v) for v in variants],
    }


@tool(
    returns=("category", "coupon"),
    phrasings=["What categories does the shop have?", "List the product categories"],
)
def list_categories(ctx: ToolContext) -> CategoryList:
    """List the catalog's categories with product counts, price ranges and current coupons.

    Returns:
        {"categories": [{"category": "kitchen", "name": "Kitchen", "products": 11,
        "in_stock_products": 10, "price_from": "19.99", "price_to": "449.99", "coupons":
        ["KITCHEN10"]}, ...]}; coupons lists active coupons for that category only.
    """
    variants: dict[str, list[Any]] = {}
    for v in ctx.sql.all(VARIANTS):
        variants.setdefault(v.product_id, []).append(v)
    products: dict[str, list[str]] = {slug: [] for slug in CATEGORIES}
    for p in ctx.sql.all(PRODUCTS):
        products.setdefault(p.category, []).append(p.id)
    codes: dict[str, list[str]] = {slug: [] for slug in CATEGORIES}
    for c in ctx.sql.all(ACTIVE_CATEGORY_COUPONS, now=_now(ctx)):
        codes.setdefault(c.category, []).append(c.code)
    out: list[CategoryOut] = []
    for slug, name in CATEGORIES.items():
        ids = products[slug]
        prices = [v.price for pid in ids for v in variants.get(pid, [])]
        out.append(
            {
                "category": slug,
                "name": name,
                "products": len(ids),
                "in_stock_products": sum(
                    1 for pid in ids if any(v.stock > 0 for v in variants.get(pid, []))
                ),
                "price_from": min(prices, default=None),
                "price_to": max(prices, default=None),
                "coupons": codes[slug],
            }
        )
    return {"categories": out}


@tool(
    returns=("variant", "product"),
    phrasings=[
        "Is {variant_ids} in stock?",
        "Can I get {quantity} of {variant_ids}?",
        "Check the stock of {variant_ids}",
    ],
    examples={"quantity": [1, 2, 3, 5]},
)
def check_availability(
    ctx: ToolContext, variant_ids: VariantIds, quantity: Quantity = 1
) -> AvailabilityList:
    """Check how many units of some variants are in stock and whether `quantity` can be had.

    Args:
        variant_ids: The variants, such as ["var_00117", "var_00118"] (get_product lists a
            product's variants).
        quantity: How many units the customer wants of each (1-10), such as 2.

    Returns:
        {"quantity": 2, "variants": [{"variant_id": "var_00117", "name": "Northway Rain
        Jacket", "label": "Navy / M", "price": "129.99", "stock": 3, "availability":
        "low_stock", "can_fulfil": true}, ...]}.
    """
    seen: set[str] = set()
    out: list[AvailabilityOut] = []
    for v in variant_ids:
        if v.id in seen:
            continue
        seen.add(v.id)
        out.append(
            {
                "variant_id": v.id,
                "product_id": v.product_id,
                "name": ctx.sql.scalar(PRODUCT_NAME, id=v.product_id),
                "label": v.label,
                "price": v.price,
                "stock": v.stock,
                "availability": availability(v.stock),
                "can_fulfil": v.stock >= quantity,
            }
        )
    return {"quantity": quantity, "variants": out}
