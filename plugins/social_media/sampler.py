"""A realistic social network: size 1 gives ~49 people (about a third with private accounts),
~450 follows, ~10 pending follow requests, ~8 blocks, ~330 posts from the last 30 days,
~450 comments and ~1,500 likes; size n gives n times as many people and posts.

The signed-in person ("me", ``usr_001``) has a private account: they follow public and
private accounts, have pending follow requests both ways, blocked two people and are blocked
by two others, so every visibility rule matters to what they may see and do. Comments and
likes come only from people who could see the post, and never across a block.
"""

from __future__ import annotations

import datetime as dt
from itertools import accumulate
from random import Random
from typing import Any

from prove_gym.server import SampleContext

from .models import Block, Comment, Follow, FollowRequest, Like, Me, Post, User

HISTORY_DAYS = 30
PER_SIZE = 48
"""People besides me per unit of size."""

CITIES = [
    "Lisbon",
    "Austin, TX",
    "Toronto",
    "Berlin",
    "Melbourne",
    "Seattle, WA",
    "Mexico City",
    "Nairobi",
    "Dublin",
    "Seoul",
    "Cape Town",
    "Portland, OR",
    "",
]
BIOS = [
    "Coffee first. Then code.",
    "Trail runner, amateur baker, full-time dog person.",
    "Photographer. Chasing golden hour since 2012.",
    "Product designer. Opinions are my own.",
    "Teacher by day, synth nerd by night.",
    "Plant parent of 37. Send help.",
    "Writing about cities, bikes and trains.",
    "Home cook sharing weeknight recipes.",
    "Indie game dev. Currently shipping something small.",
    "Marathoner in training. Slowly.",
    "Reading 52 books this year.",
    "Nurse, gardener, occasional poet.",
    "Climber and climbing gym route setter.",
    "Birdwatcher. Ask me about warblers.",
    "",
]
DISHES = ["shakshuka", "ramen", "banana bread", "dal", "sourdough", "tacos al pastor", "pho"]
PLACES = ["the pier", "Riverside Park", "the old market", "the lake trail", "downtown", "the coast"]
BOOKS = ["Piranesi", "Project Hail Mary", "The Overstory", "Klara and the Sun", "Circe"]
POSTS = [
    "Finally nailed my {dish} recipe after {n} tries. #cooking #homemade",
    "Sunset at {place} tonight was unreal. #photography #goldenhour",
    "Ran {n} km this morning, legs are done. #running #training",
    "Just finished {book}. Highly recommend! #reading #books",
    "Anyone have tips for keeping basil alive indoors? #plants",
    "New blog post: what I learned moving to {city}. Link in bio. #travel",
    "Weekend plans: farmers market, long walk at {place}, zero screens.",
    "Shipped a tiny side project today. Small wins count. #buildinpublic",
    "Coffee shop recommendations near {place}? Need a new work spot. #coffee",
    "Day {n} of learning the guitar. My fingers hurt. #music",
    "Spotted a heron at {place} this morning! #birding",
    "Hot take: {dish} is better the next day. #food",
    "Rainy day, good book ({book}), big mug of tea. Perfect.",
    "Climbed my first V{grade} today!! #climbing",
    "Thank you all for {n} followers, you're the best.",
    "Road trip playlist suggestions? Leaving for the coast on Friday. #roadtrip",
    "Tried the new bakery downtown. The croissants are worth the queue.",
    "Reminder to drink water and stretch. That's the post.",
]
COMMENTS = [
    "Love this!",
    "Wow, looks amazing.",
    "Saving this for later.",
    "Congrats!! 🎉",
    "Where is this?",
    "Same here, honestly.",
    "Recipe please!",
    "So good to see you back at it.",
    "This made my day.",
    "Totally agree.",
    "Ha, been there.",
    "Great shot!",
    "Need to try this.",
    "Can confirm, it's great.",
    "Keep going, you've got this!",
]


def sample_social_media(ctx: SampleContext) -> None:
    """Fill an empty social network database (see the module docstring for sizes)."""
    _Network(ctx).build()


class _Network:
    def __init__(self, ctx: SampleContext) -> None:
        self.ctx = ctx
        self.rng: Random = ctx.rng
        self.now = ctx.now.replace(second=0, microsecond=0)
        self.users: list[dict[str, Any]] = []
        self.handles: set[str] = set()
        self.follows: dict[tuple[str, str], dt.datetime] = {}
        self.requests: dict[tuple[str, str], dt.datetime] = {}
        self.blocks: dict[tuple[str, str], dt.datetime] = {}
        self.private: dict[str, bool] = {}

    # ------------------------------------------------------------ people
    def person(self, *, private: bool) -> str:
        fake, rng = self.ctx.fake, self.rng
        while True:
            first, last = fake.first_name(), fake.last_name()
            style = rng.randint(0, 3)
            raw = [
                first + last,
                first + "_" + last,
                first[0] + last,
                first + str(rng.randint(1, 99)),
            ][style]
            base = "".join(c for c in raw.lower() if (c.isalnum() or c == "_") and c.isascii())
            if len(base) < 3 or not base[0].isalpha():
                continue
            handle, n = base[:24], 1
            while handle in self.handles:
                n += 1
                handle = f"{base[:24]}{n}"
            break
        self.handles.add(handle)
        uid = f"usr_{len(self.users) + 1:03d}"
        self.users.append(
            {
                "id": uid,
                "handle": handle,
                "name": f"{first} {last}",
                "bio": rng.choice(BIOS),
                "location": rng.choice(CITIES),
                "is_private": private,
                "verified": rng.random() < 0.08,
                "joined_at": self.now - dt.timedelta(days=rng.randint(60, 2500)),
                "follower_count": 0,
                "following_count": 0,
                "post_count": 0,
            }
        )
        self.private[uid] = private
        return uid

    def blocked(self, a: str, b: str) -> bool:
        return (a, b) in self.blocks or (b, a) in self.blocks

    def can_see(self, viewer: str, author: str) -> bool:
        if viewer == author:
            return True
        if self.blocked(viewer, author):
            return False
        return not self.private[author] or (viewer, author) in self.follows

    def when(self, days_min: int, days_max: int) -> dt.datetime:
        at = self.now - dt.timedelta(
            days=self.rng.randint(days_min, days_max), minutes=self.rng.randint(1, 1439)
        )
        return at.replace(second=0, microsecond=0)

    # ------------------------------------------------------------ build
    def build(self) -> None:
        rng = self.rng
        me = self.person(private=True)
        others = [self.person(private=rng.random() < 0.3) for _ in range(PER_SIZE * self.ctx.size)]
        everyone = [me, *others]
        private = [u for u in others if self.private[u]]
        # blocks first: me blocks two people, two others block me, a few more among others
        pool = rng.sample(others, 4)
        for victim in pool[:2]:
            self.blocks[(me, victim)] = self.when(1, 200)
        for blocker in pool[2:]:
            self.blocks[(blocker, me)] = self.when(1, 200)
        for _ in range(2 * self.ctx.size):
            a, b = rng.sample(others, 2)
            if not self.blocked(a, b):
                self.blocks[(a, b)] = self.when(1, 300)
        # my follows: public and private accounts, pending requests to a few private ones
        free = [u for u in others if not self.blocked(me, u)]
        for u in rng.sample(free, min(len(free), 16)):
            self.follows[(me, u)] = self.when(1, 400)
        for u in [u for u in private if (me, u) not in self.follows and not self.blocked(me, u)][
            :3
        ]:
            self.requests[(me, u)] = self.when(0, 20)
        # who follows me: approved followers, and pending requests waiting for my answer
        fans = [u for u in free if (u, me) not in self.follows]
        chosen = rng.sample(fans, min(len(fans), 18))
        for u in chosen[:13]:
            self.follows[(u, me)] = self.when(1, 400)
        for u in chosen[13:]:
            self.requests[(u, me)] = self.when(0, 14)
        # everybody else follows 4-16 people, popular (public) accounts more often
        # the same for everyone, summed once (``choices`` with ``weights`` sums them per call)
        cum_weights = list(accumulate(3 if not self.private[v] else 1 for v in everyone))
        for u in others:
            k = rng.randint(4, 16)
            for v in sorted(set(rng.choices(everyone, cum_weights=cum_weights, k=k))):
                if v in (u, me) or self.blocked(u, v) or (u, v) in self.requests:
                    continue
                self.follows.setdefault((u, v), self.when(1, 500))
        for target in private:
            for u in rng.sample(others, 2):
                if u == target or self.blocked(u, target) or (u, target) in self.follows:
                    continue
                self.requests.setdefault((u, target), self.when(0, 30))
        self.write(everyone, me)

    def write(self, everyone: list[str], me: str) -> None:
        rng = self.rng
        # posts: 2-11 per person (me: 8), spread over the last 30 days
        raw_posts: list[tuple[dt.datetime, int, str, str, bool]] = []
        order = 0
        for u in everyone:
            for _ in range(8 if u == me else rng.randint(2, 11)):
                order += 1
                raw_posts.append(
                    (self.when(0, HISTORY_DAYS - 1), order, u, self.text(), rng.random() > 0.1)
                )
        raw_posts.sort()
        posts: list[dict[str, Any]] = []
        comments_raw: list[tuple[dt.datetime, str, str, str]] = []
        likes: list[dict[str, Any]] = []
        viewers_of: dict[str, list[str]] = {}  # who sees an author's posts: no one's changes
        for n, (at, _, author, text, open_) in enumerate(raw_posts, 1):
            pid = f"post_{n:05d}"
            viewers = viewers_of.get(author)
            if viewers is None:
                viewers = [v for v in everyone if v != author and self.can_see(v, author)]
                viewers_of[author] = viewers
            likers = rng.sample(viewers, min(len(viewers), rng.randint(0, 9)))
            for v in sorted(likers):
                likes.append({"post_id": pid, "user_id": v, "created_at": self.after(at, 60 * 48)})
            n_comments = rng.choice([0, 0, 0, 1, 1, 2, 3, 4]) if open_ else 0
            for _ in range(min(n_comments, len(viewers))):
                who = rng.choice(viewers)
                comments_raw.append((self.after(at, 60 * 36), pid, who, rng.choice(COMMENTS)))
            posts.append(
                {
                    "id": pid,
                    "author_id": author,
                    "text": text,
                    "created_at": at,
                    "comments_enabled": open_,
                    "like_count": len(likers),
                    "comment_count": 0,
                }
            )
        comments_raw.sort()
        by_post = {p["id"]: p for p in posts}
        comments = []
        for n, (at, pid, who, text) in enumerate(comments_raw, 1):
            by_post[pid]["comment_count"] += 1
            comments.append(
                {
                    "id": f"cmt_{n:05d}",
                    "post_id": pid,
                    "author_id": who,
                    "text": text,
                    "created_at": at,
                }
            )
        by_user = {u["id"]: u for u in self.users}
        for p in posts:
            by_user[p["author_id"]]["post_count"] += 1
        for a, b in self.follows:
            by_user[a]["following_count"] += 1
            by_user[b]["follower_count"] += 1
        self.ctx.insert(self.users, into=User)
        self.ctx.insert([{"id": 1, "user_id": me}], into=Me)
        self.ctx.insert(posts, into=Post)
        if comments:
            self.ctx.insert(comments, into=Comment)
        if likes:
            self.ctx.insert(likes, into=Like)
        self.ctx.insert(
            [
                {"follower_id": a, "followee_id": b, "created_at": at}
                for (a, b), at in sorted(self.follows.items())
            ],
            into=Follow,
        )
        self.ctx.insert(
            [
                {"requester_id": a, "target_id": b, "created_at": at}
                for (a, b), at in sorted(self.requests.items())
            ],
            into=FollowRequest,
        )
        self.ctx.insert(
            [
                {"blocker_id": a, "blocked_id": b, "created_at": at}
                for (a, b), at in sorted(self.blocks.items())
            ],
            into=Block,
        )

    def after(self, at: dt.datetime, max_minutes: int) -> dt.datetime:
        later = at + dt.timedelta(minutes=self.rng.randint(1, max_minutes))
        return min(later, self.now - dt.timedelta(minutes=1))

    def text(self) -> str:
        rng = self.rng
        return rng.choice(POSTS).format(
            dish=rng.choice(DISHES),
            place=rng.choice(PLACES),
            book=rng.choice(BOOKS),
            city=rng.choice([c for c in CITIES if c]),
            n=rng.randint(2, 42),
            grade=rng.randint(3, 7),
        )
