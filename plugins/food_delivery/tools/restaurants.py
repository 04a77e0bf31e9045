"""Restaurant tools: search by zone and cuisine, a restaurant, its menu and options."""

from __future__ import annotations

import random
import re
from decimal import Decimal
from typing import Any

from prove_gym.server import Bound, ToolContext, search_pattern
from prove_gym.server.tool import tool

from ..models import is_open, next_opening
from ._common import _at, _average, _fees, _option_groups, _rating
from .args import Cuisine, Limit, RestaurantRow, SearchText, Zone
from .queries import (
    ACTIVE_ORDER_COUNT,
    FEES_OF,
    MENU_CATEGORIES,
    MENU_GROUPS,
    MENU_OPTIONS,
    RATINGS_OF,
    RESTAURANT_NAMES,
    _menu_matching,
    _restaurants_matching,
)
from .results import (
    CategoryOut,
    GroupOut,
    ItemOut,
    MenuOut,
    RestaurantBrief,
    RestaurantDetail,
    RestaurantList,
)


def _briefs(ctx: ToolContext, rows: list[Any]) -> list[RestaurantBrief]:
    """``_brief`` of each restaurant, their fees and ratings read in one statement each."""
    if not rows:
        return []
    ids = [r.id for r in rows]
    fees: dict[str, dict[str, Decimal]] = {}
    for z in ctx.sql.all(FEES_OF, restaurant_ids=ids):
        fees.setdefault(z.restaurant_id, {})[z.zone] = z.fee
    ratings = {
        g.restaurant_id: _average(g.count, g.stars)
        for g in ctx.sql.all(RATINGS_OF, restaurant_ids=ids)
    }
    return [_brief_of(ctx, r, fees.get(r.id, {}), ratings.get(r.id, (None, 0))) for r in rows]


def _brief(ctx: ToolContext, r: Any) -> RestaurantBrief:
    return _brief_of(ctx, r, _fees(ctx, r.id), _rating(ctx, r.id))


def _brief_of(
    ctx: ToolContext, r: Any, fees: dict[str, Decimal], rated: tuple[Decimal | None, int]
) -> RestaurantBrief:
    rating, count = rated
    return {
        "restaurant_id": r.id,
        "name": r.name,
        "cuisine": r.cuisine,
        "zone": r.zone,
        "address": r.address,
        "hours": f"{r.opens_at}-{r.closes_at}",
        "closed_days": r.closed_days.split(),
        "open_now": is_open(r, ctx.now),
        "minimum_order": r.minimum_order,
        "delivery_zones": [{"zone": z, "fee": f} for z, f in fees.items()],
        "rating": rating,
        "rating_count": count,
    }


def _item_out(item: Any, groups: list[GroupOut]) -> ItemOut:
    return {
        "item_id": item.id,
        "category": item.category,
        "name": item.name,
        "description": item.description,
        "price": item.price,
        "available": item.available,
        "option_groups": groups,
    }


def _restaurant_word(ctx: ToolContext, rng: random.Random) -> str:
    names = ctx.sql.scalars(RESTAURANT_NAMES)
    words = [w for w in rng.choice(names).split() if len(w) > 3 and w[0].isupper()]
    return words[0] if words else names[0]


@tool(
    returns="restaurant",
    phrasings=[
        "Find {cuisine} restaurants that deliver to {zone}",
        "Find restaurants called {query}",
        "Show me restaurants delivering to {zone}",
    ],
    examples={"query": _restaurant_word},
)
def search_restaurants(
    ctx: ToolContext,
    query: SearchText | None = None,
    cuisine: Cuisine | None = None,
    zone: Zone | None = None,
    open_now: bool | None = None,
    limit: Limit = 20,
) -> RestaurantList:
    """Find restaurants by name, cuisine, delivery zone or whether they are open now.

    Args:
        query: Case-insensitive text in the name or address, such as "Pizzeria" or "Sushi".
        cuisine: Only this cuisine, such as "thai" or "pizza".
        zone: Only restaurants that deliver to this zone, such as "downtown".
        open_now: true for restaurants taking orders now, false for closed ones.
        limit: Maximum number of restaurants to return (1-50), such as 20.

    Returns:
        {"total": 4, "restaurants": [{"restaurant_id": "rst_004", "name": "Thai Orchid",
        "cuisine": "thai", "hours": "11:00-22:00", "closed_days": ["mon"], "open_now": true,
        "minimum_order": "15.00", "delivery_zones": [{"zone": "downtown", "fee": "1.99"}],
        "rating": "4.3", ...}]}, by name.
    """
    text = (query or "").strip()
    params: dict[str, Any] = {}
    if text:
        params["pattern"] = search_pattern(text)
    if cuisine is not None:
        params["cuisine"] = cuisine
    if zone is not None:
        params["zone"] = zone
    matching = _restaurants_matching(bool(text), cuisine is not None, zone is not None)
    found = ctx.sql.all(matching, **params)
    ctx.spend(len(found), "restaurants", hint="filter by cuisine or zone")
    if open_now is not None:
        found = [r for r in found if is_open(r, ctx.now) == open_now]
    return {"total": len(found), "restaurants": _briefs(ctx, found[:limit])}


@tool(
    returns="restaurant",
    phrasings=[
        "Is {restaurant_id} open right now?",
        "What is the minimum order at {restaurant_id}?",
    ],
)
def get_restaurant(ctx: ToolContext, restaurant_id: RestaurantRow) -> RestaurantDetail:
    """Get one restaurant: hours, whether it is open, delivery zones and fees, menu sections.

    Args:
        restaurant_id: The restaurant, such as "rst_004" (search_restaurants finds it).

    Returns:
        {"restaurant_id": "rst_004", "open_now": false, "next_opening": "2026-03-03T11:00",
        "minimum_order": "15.00", "delivery_zones": [{"zone": "harbor", "fee": "3.49"}],
        "prep_minutes": 20, "categories": [{"category": "Curries", "items": 5,
        "available": 4}], ...}.
    """
    r: Any = restaurant_id
    cats: dict[str, CategoryOut] = {}
    for item in ctx.sql.all(MENU_CATEGORIES, restaurant_id=r.id):
        cat = cats.setdefault(
            item.category, {"category": item.category, "items": 0, "available": 0}
        )
        cat["items"] += 1
        cat["available"] += int(item.available)
    active = ctx.sql.scalar(ACTIVE_ORDER_COUNT, restaurant_id=r.id)
    open_now = is_open(r, ctx.now)
    return {
        **_brief(ctx, r),
        "phone": r.phone,
        "prep_minutes": r.prep_minutes,
        "next_opening": None if open_now else _at(next_opening(r, ctx.now)),
        "categories": list(cats.values()),
        "active_orders": active or 0,
    }


_DISH_WORD = re.compile(r"[A-Za-z]{4,}")


DRINK_CATEGORIES = frozenset({"Drinks", "Coffee"})
"""Menu categories of drinks, which are no dishes ("What flat dishes ...": a flat white)."""


def _dish_word(ctx: ToolContext, rng: random.Random, bound: Bound) -> str | None:
    """A word of one of the restaurant's own dishes ("margherita" at a pizzeria, "curry"
    at a Thai kitchen), as a diner searches its menu; drinks are no dishes."""
    items = ctx.sql.all(
        _menu_matching(False, False), restaurant_id=str(bound.args.get("restaurant_id", ""))
    )
    words = sorted(
        {
            w.casefold()
            for i in items
            if i.category not in DRINK_CATEGORIES
            for w in _DISH_WORD.findall(i.name)
        }
    )
    return rng.choice(words) if words else None


@tool(
    returns=("menu_item", "option", "restaurant"),
    phrasings=[
        "Show me the menu of {restaurant_id}",
        "What {search} dishes does {restaurant_id} have?",
    ],
    values={"search": _dish_word},
)
def get_menu(
    ctx: ToolContext,
    restaurant_id: RestaurantRow,
    search: SearchText | None = None,
    available_only: bool = False,
) -> MenuOut:
    """A restaurant's menu in menu order, each item with its option groups and price deltas.

    An item's price in a cart is its price plus the price_delta of each chosen option;
    every required group (such as "Size") needs exactly one choice.

    Args:
        restaurant_id: The restaurant, such as "rst_004".
        search: Case-insensitive text in an item's name, description or category, such as
            "curry" or "Drinks".
        available_only: true to leave out sold-out items.

    Returns:
        {"restaurant_id": "rst_004", "open_now": true, "total": 14, "items": [{"item_id":
        "itm_0042", "name": "Margherita", "price": "10.50", "available": true,
        "option_groups": [{"group_id": "grp_0051", "name": "Size", "required": true,
        "max_choices": 1, "options": [{"option_id": "opt_0107", "name": "Large 14in",
        "price_delta": "5.50"}, ...]}]}]}.
    """
    r: Any = restaurant_id
    text = (search or "").strip()
    params: dict[str, Any] = {"restaurant_id": r.id}
    if text:
        params["pattern"] = search_pattern(text)
    items = ctx.sql.all(_menu_matching(bool(text), available_only), **params)
    groups = _option_groups(ctx, MENU_GROUPS, MENU_OPTIONS, restaurant_id=r.id)
    return {
        "restaurant_id": r.id,
        "name": r.name,
        "open_now": is_open(r, ctx.now),
        "total": len(items),
        "items": [_item_out(i, groups.get(i.id, [])) for i in items],
    }
