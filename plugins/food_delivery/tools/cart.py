"""Cart tools: finding the customer, their cart, adding and removing items."""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Annotated, Any

from pydantic import Field

from prove_gym.server import InvalidArgument, ToolContext, next_id, search_pattern
from prove_gym.server.tool import tool

from ..models import (
    MAX_CART_LINES,
    MAX_LINE_QUANTITY,
    ZERO,
    CartLine,
    is_open,
    next_opening,
    split_ids,
)
from ..sampler import unit_price
from ._common import _at, _broken, _fees, _option_groups, _option_names
from .args import CartLineRow, CustomerRow, ItemRow, Limit, OptionRow, Quantity
from .queries import (
    ACTIVE_ORDER_IDS,
    CART,
    CART_LINE_COUNT,
    CUSTOMER_NAMES,
    CUSTOMERS_MATCHING,
    DELETE_CART_LINE,
    ITEM_GROUPS,
    ITEM_OPTIONS,
    OWN_CUSTOMER_MATCHING,
    RESTAURANT,
)
from .results import CartAdded, CartCleared, CartLineOut, CartOut, CartRemoved, CustomerOut


def _cart(ctx: ToolContext, customer: Any) -> CartOut:
    lines = ctx.sql.all(CART, customer_id=customer.id)
    restaurant = ctx.sql.first(RESTAURANT, id=lines[0].restaurant_id) if lines else None
    names = _option_names(ctx, lines)
    out_lines: list[CartLineOut] = []
    for line in lines:
        ids = split_ids(line.option_ids)
        out_lines.append(
            {
                "cart_line_id": line.id,
                "item_id": line.item_id,
                "name": line.item_name,
                "options": [names[i] for i in ids],
                "option_ids": ids,
                "quantity": line.quantity,
                "unit_price": line.unit_price,
                "line_total": line.unit_price * line.quantity,
            }
        )
    subtotal = sum((line["line_total"] for line in out_lines), ZERO)
    problems: list[str] = []
    fee: Decimal | None = None
    open_now: bool | None = None
    minimum: Decimal | None = None
    short = ZERO
    if restaurant is None:
        problems.append("cart_empty: the cart is empty")
    else:
        minimum = restaurant.minimum_order
        short = max(ZERO, minimum - subtotal)
        fee = _fees(ctx, restaurant.id).get(customer.zone)
        open_now = is_open(restaurant, ctx.now)
        if not open_now:
            problems.append(
                f"restaurant_closed: {restaurant.name} is closed now (hours "
                f"{restaurant.opens_at}-{restaurant.closes_at}); it opens at "
                f"{_at(next_opening(restaurant, ctx.now))}"
            )
        if fee is None:
            problems.append(
                f"outside_delivery_zone: {restaurant.name} does not deliver to {customer.zone}"
            )
        if short > 0:
            problems.append(
                f"below_minimum_order: add {short} more to reach the minimum order of {minimum}"
            )
        for line in lines:
            if not line.available:
                problems.append(f"item_unavailable: {line.item_name} is sold out")
    return {
        "customer_id": customer.id,
        "restaurant_id": restaurant.id if restaurant else None,
        "restaurant_name": restaurant.name if restaurant else None,
        "lines": out_lines,
        "item_count": sum(line.quantity for line in lines),
        "subtotal": subtotal,
        "minimum_order": minimum,
        "amount_to_minimum": short,
        "delivery_fee": fee,
        "open_now": open_now,
        "estimated_total": subtotal + fee if fee is not None else None,
        "ready_to_order": not problems,
        "problems": problems,
    }


def _customer_word(ctx: ToolContext, rng: random.Random) -> str:
    names = ctx.sql.scalars(CUSTOMER_NAMES)
    return rng.choice(names).split()[-1]


@tool(
    returns=("customer", "order"),
    phrasings=["Find the customer {query}", "Look up the account of {query}"],
    examples={"query": _customer_word},
)
def find_customer(
    ctx: ToolContext, query: Annotated[str, Field(min_length=1, max_length=200)], limit: Limit = 10
) -> list[CustomerOut]:
    """Find customers by name, email, phone or id, with their zone, cart and active orders.

    Acting for a signed-in customer, it finds only their own account.

    Args:
        query: Case-insensitive text, such as "Garcia", "ana.garcia@gmail.com" or "cus_0012".
        limit: Maximum number of customers to return (1-50), such as 10.

    Returns:
        [{"customer_id": "cus_0012", "name": "Ana Garcia", "zone": "riverside",
        "address": "12 Elm Street, Apt 4", "cart_lines": 2, "active_order_ids":
        ["ord_00321"], ...}], by name.
    """
    text = query.strip()
    if not text:
        raise InvalidArgument("query must not be blank: give part of a name, email or phone.")
    if ctx.principal is not None:  # a signed-in customer sees their own account only
        rows = ctx.sql.all(
            OWN_CUSTOMER_MATCHING, me=ctx.principal, pattern=search_pattern(text), limit=limit
        )
    else:
        rows = ctx.sql.all(CUSTOMERS_MATCHING, pattern=search_pattern(text), limit=limit)
    out: list[CustomerOut] = []
    for c in rows:
        active = ctx.sql.scalars(ACTIVE_ORDER_IDS, customer_id=c.id)
        out.append(
            {
                "customer_id": c.id,
                "name": c.name,
                "email": c.email,
                "phone": c.phone,
                "address": c.address,
                "zone": c.zone,
                "cart_lines": ctx.sql.scalar(CART_LINE_COUNT, customer_id=c.id),
                "active_order_ids": active,
            }
        )
    return out


@tool(
    returns=("cart_line", "menu_item", "option", "restaurant"),
    phrasings=["What is in the cart of {customer_id}?", "Can {customer_id} check out their cart?"],
)
def view_cart(ctx: ToolContext, customer_id: CustomerRow) -> CartOut:
    """Show a customer's cart: lines, subtotal, delivery fee and what would block ordering.

    Args:
        customer_id: The customer, such as "cus_0012" (find_customer finds them).

    Returns:
        {"customer_id": "cus_0012", "restaurant_id": "rst_004", "lines": [{"cart_line_id":
        "cl_0031", "name": "Margherita", "options": ["Large 14in"], "quantity": 2,
        "unit_price": "16.00", "line_total": "32.00"}], "subtotal": "32.00",
        "minimum_order": "15.00", "amount_to_minimum": "0.00", "delivery_fee": "1.99",
        "ready_to_order": true, "problems": []}; problems name the rule that would refuse
        the order, such as "below_minimum_order: add 3.50 more ...".
    """
    return _cart(ctx, customer_id)


@tool(
    writes=True,
    returns=("cart_line", "menu_item", "option", "restaurant"),
    phrasings=[
        "Add {item_id} with options {option_ids} to the cart of {customer_id}",
        "Put {quantity} x {item_id} ({option_ids}) in {customer_id}'s cart",
        "{customer_id} wants {item_id} with {option_ids}",
    ],
    examples={"quantity": [1, 1, 2, 3]},
)
def add_to_cart(
    ctx: ToolContext,
    customer_id: CustomerRow,
    item_id: ItemRow,
    option_ids: Annotated[list[OptionRow], Field(max_length=10)],
    quantity: Quantity = 1,
) -> CartAdded:
    """Add a menu item with its chosen options to a customer's cart.

    Choose exactly one option of every required group (such as a size) and at most
    max_choices of an optional group (see get_menu). A cart holds one restaurant's items,
    from a restaurant that delivers to the customer's zone. Adding the same item with the
    same options again raises that line's quantity.

    Args:
        customer_id: The customer, such as "cus_0012".
        item_id: The menu item, such as "itm_0042".
        option_ids: The chosen options, such as ["opt_0107", "opt_0110"]; [] when the item
            has no required group and no add-ons are wanted.
        quantity: How many (1-20), such as 2.

    Returns:
        The cart with "added_line_id": "cl_0032", its lines, "subtotal" and "problems".
    """
    c = customer_id
    item: Any = item_id  # a row, as unit_price reads it
    if not item.available:
        raise _broken(
            "item_unavailable",
            f"{item.name} ({item.id}) is sold out right now and cannot be added. Pick another "
            "item from the restaurant's menu.",
        )
    chosen: dict[str, list[Any]] = {}
    seen: set[str] = set()
    for opt in option_ids:
        if opt.item_id != item.id:
            raise InvalidArgument(
                f"Rule 'option_not_on_item' failed: option {opt.id} ({opt.name}) belongs to "
                f"item {opt.item_id}, not to {item.name} ({item.id}); choose options from this "
                "item's option groups on the menu."
            )
        if opt.id in seen:
            raise InvalidArgument(
                f"Rule 'option_not_on_item' failed: option {opt.id} ({opt.name}) is listed "
                "twice; list each option once and use quantity for more of the item."
            )
        seen.add(opt.id)
        chosen.setdefault(opt.group_id, []).append(opt)
    groups = _option_groups(ctx, ITEM_GROUPS, ITEM_OPTIONS, item_id=item.id)
    for g in groups.get(item.id, []):
        picked = chosen.get(g["group_id"], [])
        if g["required"] and len(picked) != 1:
            names = ", ".join(f"{o['option_id']} ({o['name']})" for o in g["options"])
            raise _broken(
                "required_option_missing",
                f"{item.name} needs exactly one '{g['name']}' choice, got {len(picked)}; choose "
                f"one of {names}.",
            )
        if len(picked) > g["max_choices"]:
            raise _broken(
                "too_many_options",
                f"'{g['name']}' of {item.name} takes at most {g['max_choices']} options, got "
                f"{len(picked)}; leave some out.",
            )
    restaurant = ctx.sql.one(RESTAURANT, id=item.restaurant_id)
    lines = ctx.sql.all(CART, customer_id=c.id)
    if lines and lines[0].restaurant_id != restaurant.id:
        other = ctx.sql.one(RESTAURANT, id=lines[0].restaurant_id)
        raise _broken(
            "one_restaurant_per_cart",
            f"the cart of {c.name} ({c.id}) holds items from {other.name} ({other.id}); a cart "
            f"holds one restaurant's items, so {item.name} from {restaurant.name} cannot be "
            "added. Order or clear the current cart first.",
        )
    if c.zone not in _fees(ctx, restaurant.id):
        raise _broken(
            "outside_delivery_zone",
            f"{restaurant.name} ({restaurant.id}) does not deliver to {c.zone}, where "
            f"{c.name} lives; search for restaurants that deliver to {c.zone}.",
        )
    ids = " ".join(sorted(o.id for o in option_ids))
    same = next((ln for ln in lines if ln.item_id == item.id and ln.option_ids == ids), None)
    if same is not None:
        if same.quantity + quantity > MAX_LINE_QUANTITY:
            raise _broken(
                "cart_limit",
                f"the cart already has {same.quantity} of {item.name} with these options; at "
                f"most {MAX_LINE_QUANTITY} of one item fit in a cart.",
            )
        ctx.sql.update(CartLine, same, quantity=same.quantity + quantity)
        line_id = same.id
    else:
        if len(lines) >= MAX_CART_LINES:
            raise _broken(
                "cart_limit",
                f"the cart already has {len(lines)} lines, the most allowed; order or remove "
                "some lines first.",
            )
        line_id = next_id(ctx, CartLine.id, "cl", 4)
        ctx.sql.insert(
            CartLine,
            id=line_id,
            customer_id=c.id,
            restaurant_id=restaurant.id,
            item_id=item.id,
            option_ids=ids,
            quantity=quantity,
            unit_price=unit_price(item, list[Any](option_ids)),
            added_at=ctx.now,
        )
    return {**_cart(ctx, c), "added_line_id": line_id}


@tool(
    stands_in_for=("clear_cart",),
    writes=True,
    inverse_of="add_to_cart",
    destructive=True,
    returns=("cart_line", "customer"),
    phrasings=[
        "Remove line {cart_line_id} from the cart of {customer_id}",
        "Take {cart_line_id} out of {customer_id}'s cart",
    ],
)
def remove_from_cart(
    ctx: ToolContext, customer_id: CustomerRow, cart_line_id: CartLineRow
) -> CartRemoved:
    """Remove one line (an item with its options, all of its quantity) from a cart.

    Args:
        customer_id: The customer, such as "cus_0012".
        cart_line_id: The line, such as "cl_0031" (view_cart lists them).

    Returns:
        The cart without the line, with "removed_line_id": "cl_0031".
    """
    line = cart_line_id
    if line.customer_id != customer_id.id:
        raise InvalidArgument(
            f"cart line {line.id} is in the cart of customer {line.customer_id}, not "
            f"{customer_id.id}; view this customer's cart to find their lines."
        )
    ctx.sql.run(DELETE_CART_LINE, id=line.id)
    return {**_cart(ctx, customer_id), "removed_line_id": line.id}


@tool(
    writes=True,
    destructive=True,
    idempotent=True,
    inverse_of="add_to_cart",
    returns="customer",
    phrasings=["Empty the cart of {customer_id}", "Clear {customer_id}'s cart, start over"],
)
def clear_cart(ctx: ToolContext, customer_id: CustomerRow) -> CartCleared:
    """Remove every line from a customer's cart (needed to order from another restaurant).

    Args:
        customer_id: The customer, such as "cus_0012".

    Returns:
        The empty cart with "removed_lines": 3.
    """
    lines = ctx.sql.all(CART, customer_id=customer_id.id)
    for line in lines:
        ctx.sql.run(DELETE_CART_LINE, id=line.id)
    return {**_cart(ctx, customer_id), "removed_lines": len(lines)}
