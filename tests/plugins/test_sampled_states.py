"""Every shipped server samples the same initial states as when these hashes were pinned.

A sampler made faster must keep every draw in the same order and every value the same:
synthesis, the shipped tasks and every recorded state hash depend on it. The shipped tasks
pin their servers' states only at the seeds they were written at (often one per server);
this pins each server's canonical state hash (what :meth:`Session.state_hash` gives at the
start, which does not depend on SQLite's page layout or version) at two more, one of each synthesis size. A change
that is meant to alter a server's states bumps its ``EnvVersion`` and updates the pin here.
"""

from __future__ import annotations

import pytest

import prove_gym

PINNED: dict[str, tuple[str, str]] = {
    # server: (seed 3 at size 1, seed 4 at size 2), first 16 hex digits of the state hash
    "banking": ("861da7a5122d796d", "4c340ea03c373c7f"),
    "budget": ("cb7fee46474ae89b", "e843fcc199ab1591"),
    "calendar": ("2bb73456f3712861", "3c1a23555b73cb09"),
    "crm": ("8dc9161e7e1ddea6", "0ecb5c85e0cba87f"),
    "email": ("c531b6fe8cc20302", "cc844d551205892c"),
    "filesystem": ("c5fb440f0fbe9662", "761258fb98ab36b6"),
    "food_delivery": ("573ae02e4a4fe925", "ec151dd23059301d"),
    "iot_devices": ("170f2b94ad642219", "03693812530ff05b"),
    "issue_tracker": ("a104412848e96742", "8958f55041fd1572"),
    "maps": ("46921a0ab3827a2b", "d4d7b2c71a1c6246"),
    "marketplace": ("e34a1299b2739d58", "b20efdde7ca28bab"),
    "payments": ("b1aa090b97ac673a", "d662573012802bf8"),
    "retail_chain": ("a30081110f293132", "aa28be5dad00536a"),
    "shopping": ("75217d3ee196f0ad", "ceb5455cbb9f787d"),
    "social_media": ("bed80fbc8156f610", "fd8e545654986e26"),
    "team_chat": ("2c0c5e255757f802", "39f40b1442d5d71e"),
    "trading": ("cbac8ede54e2ef7e", "1e63962b7658a6a3"),
    "travel_booking": ("e9f6fbffe5b65e0c", "3111488313ae40cf"),
    "vehicle": ("ad1acea8aa1ae4e7", "668ca0de918eb6fb"),
    "video_meeting": ("79a90fc421e06c0a", "8121c54ce7483c96"),
}


def test_every_shipped_server_is_pinned() -> None:
    assert sorted(PINNED) == sorted(prove_gym.get_registry().servers)


@pytest.mark.parametrize("name", sorted(PINNED))
def test_sampled_states_keep_their_pinned_hashes(name: str) -> None:
    server = prove_gym.get_registry().servers[name]
    got = []
    for seed, size in ((3, 1), (4, 2)):
        # sampled afresh, not a template cached by an earlier test
        template = server.sample(seed, size)
        got.append(template.canonical_hash(server.base.metadata)[:16])
    assert tuple(got) == PINNED[name]
