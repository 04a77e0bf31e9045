"""The iot_devices server: device limits and scene/automation rules, and the conformance suite."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import prove_gym
from prove_gym import ErrorKind, Session
from prove_gym.testing.conformance import conformance_suite
from prove_gym.testing.sql import count, one, rows

IOT = prove_gym.get_server("iot_devices")
FEW = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TRIGGERS = {"motion": {"motion_detected", "motion_cleared"}, "contact": {"opened", "closed"}}


def rule_violations(session: Session) -> list[str]:
    """Every broken rule of the server (see plugins/iot_devices/tools.py), read from SQLite.

    Tenths-of-a-unit columns (setpoints, loads, sensor values) are stored as integers x10.
    """
    broken: list[str] = []
    for dev, bright, dimmable, lo, hi, ct in rows(
        session,
        "SELECT id, brightness, dimmable, color_temp_min_k, color_temp_max_k, color_temp_k "
        "FROM devices WHERE kind = 'light'",
    ):
        if not 1 <= bright <= 100 or (not dimmable and bright != 100):
            broken.append(f"{dev}: brightness {bright} (dimmable={dimmable})")
        if (lo is None) != (ct is None) or (ct is not None and not lo <= ct <= hi):
            broken.append(f"{dev}: colour temperature {ct} outside {lo}-{hi}")
    for dev, mode, sp, lo, hi in rows(
        session,
        "SELECT id, hvac_mode, setpoint_c, min_setpoint_c, max_setpoint_c FROM devices "
        "WHERE kind = 'thermostat'",
    ):
        if mode not in ("off", "heat", "cool", "auto") or not lo <= sp <= hi or sp % 5:
            broken.append(f"{dev}: thermostat {mode} at {sp} outside {lo}-{hi} tenths")
    for dev, state, door in rows(
        session,
        "SELECT l.id, l.lock_state, s.value FROM devices l LEFT JOIN devices s "
        "ON s.id = l.contact_sensor_id WHERE l.kind = 'lock'",
    ):
        if state not in ("locked", "unlocked", "jammed") or (state == "locked" and door == 10):
            broken.append(f"{dev}: lock {state} with door value {door}")
    broken += [
        f"{d}: blind at {p}%"
        for d, p in rows(session, "SELECT id, position FROM devices WHERE kind = 'blind'")
        if not 0 <= p <= 100
    ]
    broken += [
        f"{d}: plug on with a {w} load over its {m} W rating"
        for d, w, m in rows(
            session, "SELECT id, load_w, max_load_w FROM devices WHERE kind = 'plug' AND is_on"
        )
        if w > m * 10
    ]
    broken += [
        f"{d}: sensor value {v} is not its newest reading {r}"
        for d, v, r in rows(
            session,
            "SELECT d.id, d.value, (SELECT value FROM readings r WHERE r.device_id = d.id "
            "ORDER BY recorded_at DESC, id DESC LIMIT 1) FROM devices d WHERE kind = 'sensor'",
        )
        if v != r
    ]
    broken += [
        f"{d}: in room {r} of another home"
        for d, r in rows(
            session,
            "SELECT d.id, d.room_id FROM devices d JOIN rooms r ON r.id = d.room_id "
            "WHERE r.home_id != d.home_id",
        )
    ]
    broken += [
        f"scene {s}: device {d} of another home, or a sensor"
        for s, d in rows(
            session,
            "SELECT s.id, d.id FROM scene_actions a JOIN scenes s ON s.id = a.scene_id "
            "JOIN devices d ON d.id = a.device_id WHERE d.home_id != s.home_id "
            "OR d.kind = 'sensor'",
        )
    ]
    for scene, n, top in rows(
        session, "SELECT scene_id, count(*), max(position) FROM scene_actions GROUP BY scene_id"
    ):
        if n != top:
            broken.append(f"scene {scene}: action positions are not 1..{n}")
    if count(
        session, "SELECT count(*) FROM scene_actions WHERE scene_id NOT IN (SELECT id FROM scenes)"
    ):
        broken.append("a scene action outlived its scene")
    for auto, home, trig, stype, s_home, online, enabled, scene_home in rows(
        session,
        "SELECT a.id, a.home_id, a.trigger, d.sensor_type, d.home_id, d.online, a.enabled, "
        "s.home_id FROM automations a JOIN devices d ON d.id = a.trigger_device_id "
        "LEFT JOIN scenes s ON s.id = a.scene_id",
    ):
        if trig not in TRIGGERS.get(stype, set()):
            broken.append(f"{auto}: trigger {trig} on a {stype} sensor")
        if scene_home is None or not home == s_home == scene_home:
            broken.append(f"{auto}: sensor, scene and automation in different homes (or no scene)")
        if enabled and not online:
            broken.append(f"{auto}: enabled with an offline sensor")
    for table in ("scenes", "automations"):
        broken += [
            f"{table}: name {n!r} used twice in {h}"
            for h, n in rows(
                session,
                f"SELECT home_id, lower(name) FROM {table} GROUP BY 1, 2 HAVING count(*) > 1",
            )
        ]
    return broken


TestConformance = conformance_suite(
    "iot_devices",
    samples=[
        "hom_01",
        "hom_99",
        "rm_001",
        "dev_0001",
        "dev_0005",
        "dev_9999",
        "scn_001",
        "aut_001",
        "motion_detected",
        "heat",
        "lock",
        21.5,
    ],
    invariants=rule_violations,
)


# ----------------------------------------------------------------- helpers
@pytest.fixture
def home() -> Iterator[Session]:
    with IOT.session(seed=0) as s:
        yield s


def _set(session: Session, sql: str, *params: Any) -> None:
    session.raw_connection.execute(sql, params)
    session.raw_connection.commit()


def _first(session: Session, where: str) -> str:
    dev = one(session, f"SELECT id FROM devices WHERE {where} ORDER BY id LIMIT 1")
    assert dev is not None, where
    return str(dev)


def _refused(session: Session, tool: str, args: dict[str, Any], rule: str, kind: ErrorKind) -> str:
    before = session.state_hash()
    result = session.call(tool, args)
    assert result.error_kind == kind, (tool, result.message)
    assert f"Rule '{rule}' failed" in result.message or rule in result.message, result.message
    assert session.state_hash() == before
    return result.message


PRE = ErrorKind.PRECONDITION_FAILED


# ------------------------------------------------------------------ sampler
@pytest.mark.parametrize("size", [1, 2])
def test_sizes_give_dozens_to_hundreds_of_entities(size: int) -> None:
    with IOT.session(seed=3, size=size) as s:
        assert rule_violations(s) == []
        assert count(s, "SELECT count(*) FROM homes") == 2 * size
        assert 50 * size <= count(s, "SELECT count(*) FROM devices") <= 130 * size
        assert count(s, "SELECT count(*) FROM readings") >= 300 * size
        assert count(s, "SELECT count(*) FROM scenes") >= 4 * size
        kinds = {k for (k,) in rows(s, "SELECT DISTINCT kind FROM devices")}
        assert kinds == {"light", "thermostat", "lock", "blind", "plug", "sensor"}


def test_sampled_states_obey_the_rules_and_hold_the_edge_cases() -> None:
    offline = jammed = open_doors = overloaded = 0
    for seed in range(12):
        with IOT.session(seed=seed) as s:
            assert rule_violations(s) == [], seed
            offline += count(s, "SELECT count(*) FROM devices WHERE NOT online")
            jammed += count(s, "SELECT count(*) FROM devices WHERE lock_state = 'jammed'")
            open_doors += count(
                s, "SELECT count(*) FROM devices WHERE sensor_type='contact' AND value=10"
            )
            overloaded += count(
                s, "SELECT count(*) FROM devices WHERE kind='plug' AND load_w > max_load_w*10"
            )
    assert offline and jammed and open_doors and overloaded


# -------------------------------------------------------------- the limits
def test_an_offline_device_refuses_every_command(home: Session) -> None:
    light = _first(home, "kind = 'light' AND dimmable")
    _set(home, "UPDATE devices SET online = 0 WHERE id = ?", light)
    message = _refused(home, "set_light_power", {"light_id": light, "power": "on"}, "offline", PRE)
    assert "is offline (last seen" in message and "reconnects" in message
    _refused(home, "set_brightness", {"light_id": light, "brightness": 50}, "offline", PRE)
    assert home.call(
        "move_device",
        {"device_id": light, "room_id": one(home, "SELECT room_id FROM devices WHERE id=?", light)},
    ).ok


def test_a_command_for_another_kind_names_the_kind(home: Session) -> None:
    thermostat = _first(home, "kind = 'thermostat'")
    message = _refused(
        home,
        "set_brightness",
        {"light_id": thermostat, "brightness": 50},
        "device_kind",
        ErrorKind.BAD_ARGUMENTS,
    )
    assert "is a thermostat, not a light" in message


def test_a_light_that_is_not_dimmable_only_takes_full_brightness(home: Session) -> None:
    switch = _first(home, "kind = 'light' AND NOT dimmable AND online")
    _refused(home, "set_brightness", {"light_id": switch, "brightness": 40}, "not_dimmable", PRE)
    result = home.call("set_brightness", {"light_id": switch, "brightness": 100})
    assert result.ok and result.content["power"] == "on"
    dimmable = _first(home, "kind = 'light' AND dimmable AND online")
    out = home.call("set_brightness", {"light_id": dimmable, "brightness": 35}).content
    assert out["brightness"] == 35 and out["power"] == "on"
    assert one(home, "SELECT brightness FROM devices WHERE id = ?", dimmable) == 35


def test_colour_temperature_stays_within_the_lights_range(home: Session) -> None:
    light = _first(home, "kind = 'light' AND color_temp_max_k IS NOT NULL AND online")
    lo, hi = rows(home, "SELECT color_temp_min_k, color_temp_max_k FROM devices WHERE id=?", light)[
        0
    ]
    message = _refused(
        home,
        "set_color_temperature",
        {"light_id": light, "kelvin": hi + 100},
        "color_temperature",
        PRE,
    )
    assert f"range of {lo} to {hi} K" in message
    assert (
        home.call("set_color_temperature", {"light_id": light, "kelvin": lo}).content[
            "color_temp_k"
        ]
        == lo
    )
    plain = _first(home, "kind = 'light' AND color_temp_max_k IS NULL AND online")
    _refused(
        home, "set_color_temperature", {"light_id": plain, "kelvin": 3000}, "color_temperature", PRE
    )


@FEW
@given(temperature=st.floats(5, 35).map(lambda t: round(t * 4) / 4))
def test_a_setpoint_is_accepted_exactly_within_range_and_half_degrees(temperature: float) -> None:
    with IOT.session(seed=0) as s:
        t = _first(s, "kind = 'thermostat' AND online")
        _set(s, "UPDATE devices SET hvac_mode = 'heat' WHERE id = ?", t)
        lo, hi = rows(s, "SELECT min_setpoint_c, max_setpoint_c FROM devices WHERE id = ?", t)[0]
        result = s.call(
            "set_thermostat_setpoint", {"thermostat_id": t, "temperature_c": temperature}
        )
        ok = (temperature * 2) % 1 == 0 and lo <= temperature * 10 <= hi
        assert result.ok == ok, (temperature, lo, hi, result.message)
        if ok:
            assert one(s, "SELECT setpoint_c FROM devices WHERE id = ?", t) == round(
                temperature * 10
            )
        elif (temperature * 2) % 1 == 0:
            assert "Rule 'setpoint_range' failed" in result.message


def test_a_thermostat_that_is_off_takes_no_setpoint(home: Session) -> None:
    t = _first(home, "kind = 'thermostat' AND online")
    assert home.call("set_thermostat_mode", {"thermostat_id": t, "mode": "off"}).ok
    _refused(
        home,
        "set_thermostat_setpoint",
        {"thermostat_id": t, "temperature_c": 21.0},
        "thermostat_off",
        PRE,
    )
    assert home.call("set_thermostat_mode", {"thermostat_id": t, "mode": "heat"}).ok
    assert home.call("set_thermostat_setpoint", {"thermostat_id": t, "temperature_c": 21.0}).ok


def test_a_jammed_lock_and_an_open_door_refuse_locking(home: Session) -> None:
    lock = _first(home, "kind = 'lock' AND online AND contact_sensor_id IS NOT NULL")
    sensor = one(home, "SELECT contact_sensor_id FROM devices WHERE id = ?", lock)
    _set(home, "UPDATE devices SET lock_state = 'unlocked' WHERE id = ?", lock)
    _set(home, "UPDATE devices SET value = 10 WHERE id = ?", sensor)
    _set(
        home,
        "UPDATE readings SET value = 10 WHERE device_id = ? AND recorded_at = "
        "(SELECT max(recorded_at) FROM readings WHERE device_id = ?)",
        sensor,
        sensor,
    )
    message = _refused(home, "set_lock", {"lock_id": lock, "action": "lock"}, "door_open", PRE)
    assert "reports the door open; close the door first" in message
    _set(home, "UPDATE devices SET lock_state = 'jammed' WHERE id = ?", lock)
    _refused(home, "set_lock", {"lock_id": lock, "action": "unlock"}, "lock_jammed", PRE)


def test_a_plug_refuses_a_load_above_its_rating(home: Session) -> None:
    plug = _first(home, "kind = 'plug' AND online AND NOT is_on")
    _set(home, "UPDATE devices SET load_w = max_load_w * 10 + 5 WHERE id = ?", plug)
    message = _refused(
        home, "set_plug_power", {"plug_id": plug, "power": "on"}, "plug_overload", PRE
    )
    assert "is rated for at most" in message
    assert home.call("set_plug_power", {"plug_id": plug, "power": "off"}).ok


def test_energy_total_is_the_sum_of_what_is_drawing(home: Session) -> None:
    plug = _first(
        home, "kind = 'plug' AND online AND home_id = 'hom_01' AND load_w <= max_load_w*10"
    )
    assert home.call("set_plug_power", {"plug_id": plug, "power": "on"}).ok
    usage = home.call("get_energy_usage", {"home_id": "hom_01"}).content
    assert usage["total_w"] == pytest.approx(sum(d["power_draw_w"] for d in usage["devices"]))
    assert plug in [d["device_id"] for d in usage["devices"]]
    draws = [d["power_draw_w"] for d in usage["devices"]]
    assert draws == sorted(draws, reverse=True) and all(w > 0 for w in draws)


def test_a_device_moves_only_within_its_home(home: Session) -> None:
    dev = _first(home, "home_id = 'hom_01'")
    other = one(home, "SELECT id FROM rooms WHERE home_id = 'hom_02' ORDER BY id LIMIT 1")
    _refused(home, "move_device", {"device_id": dev, "room_id": other}, "same_home", PRE)
    mine = one(home, "SELECT id FROM rooms WHERE home_id = 'hom_01' ORDER BY id DESC LIMIT 1")
    assert home.call("move_device", {"device_id": dev, "room_id": mine}).content["room_id"] == mine


# ----------------------------------------------------------------- scenes
def test_a_scene_saves_and_restores_device_states(home: Session) -> None:
    light = _first(
        home,
        "kind='light' AND dimmable AND color_temp_max_k IS NOT NULL AND online AND home_id='hom_01'",
    )
    blind = _first(home, "kind='blind' AND online AND home_id='hom_01'")
    assert home.call("set_brightness", {"light_id": light, "brightness": 33}).ok
    assert home.call("set_blind_position", {"blind_id": blind, "position": 40}).ok
    scene = home.call(
        "create_scene", {"home_id": "hom_01", "name": "Reading", "device_ids": [light, blind]}
    )
    assert scene.ok, scene.message
    attrs = [(a["device_id"], a["attribute"]) for a in scene.content["actions"]]
    assert attrs[:2] == [(light, "power"), (light, "brightness")] and attrs[-1] == (
        blind,
        "position",
    )
    assert home.call("set_light_power", {"light_id": light, "power": "off"}).ok
    assert home.call("set_blind_position", {"blind_id": blind, "position": 100}).ok
    done = home.call("activate_scene", {"scene_id": scene.content["scene_id"]}).content
    assert done["changed_devices"] == sorted([light, blind])
    assert rows(home, "SELECT is_on, brightness FROM devices WHERE id = ?", light) == [(1, 33)]
    assert one(home, "SELECT position FROM devices WHERE id = ?", blind) == 40
    dup = home.call("create_scene", {"home_id": "hom_01", "name": "reading", "device_ids": [blind]})
    assert dup.error_kind == ErrorKind.CONFLICT and "unique_name" in dup.message


def test_a_scene_refuses_sensors_and_devices_of_another_home(home: Session) -> None:
    sensor = _first(home, "kind='sensor' AND online AND home_id='hom_01'")
    _refused(
        home,
        "create_scene",
        {"home_id": "hom_01", "name": "X", "device_ids": [sensor]},
        "scene_devices",
        PRE,
    )
    far = _first(home, "kind='blind' AND home_id='hom_02'")
    _refused(
        home,
        "create_scene",
        {"home_id": "hom_01", "name": "X", "device_ids": [far]},
        "same_home",
        PRE,
    )


def test_a_scene_applies_all_or_nothing(home: Session) -> None:
    scene, dev = rows(
        home,
        "SELECT a.scene_id, a.device_id FROM scene_actions a JOIN devices d ON d.id = a.device_id "
        "WHERE d.kind IN ('light', 'blind') ORDER BY a.scene_id DESC, a.position DESC LIMIT 1",
    )[0]
    _set(home, "UPDATE devices SET online = 0 WHERE id = ?", dev)
    message = _refused(home, "activate_scene", {"scene_id": scene}, "offline", PRE)
    assert "was not applied, nothing changed" in message and dev in message


def test_a_scene_run_by_an_automation_is_not_deleted(home: Session) -> None:
    auto, scene = rows(home, "SELECT id, scene_id FROM automations ORDER BY id LIMIT 1")[0]
    message = _refused(home, "delete_scene", {"scene_id": scene}, "scene_in_use", PRE)
    assert auto in message
    for a in [r[0] for r in rows(home, "SELECT id FROM automations WHERE scene_id = ?", scene)]:
        assert home.call("delete_automation", {"automation_id": a}).ok
    assert home.call("delete_scene", {"scene_id": scene}).ok
    assert count(home, "SELECT count(*) FROM scene_actions WHERE scene_id = ?", scene) == 0


# ------------------------------------------------------------ automations
def test_an_automation_needs_a_matching_trigger_and_one_home(home: Session) -> None:
    temp = _first(home, "sensor_type = 'temperature' AND home_id = 'hom_01'")
    motion = _first(home, "sensor_type = 'motion' AND online AND home_id = 'hom_01'")
    scene = one(home, "SELECT id FROM scenes WHERE home_id = 'hom_01' ORDER BY id LIMIT 1")
    far = one(home, "SELECT id FROM scenes WHERE home_id = 'hom_02' ORDER BY id LIMIT 1")
    base = {"home_id": "hom_01", "name": "Night hall", "scene_id": scene}
    _refused(
        home,
        "create_automation",
        {**base, "sensor_id": temp, "trigger": "opened"},
        "trigger_type",
        PRE,
    )
    _refused(
        home,
        "create_automation",
        {**base, "sensor_id": motion, "trigger": "opened"},
        "trigger_type",
        PRE,
    )
    _refused(
        home,
        "create_automation",
        {**base, "sensor_id": motion, "trigger": "motion_detected", "scene_id": far},
        "same_home",
        PRE,
    )
    made = home.call(
        "create_automation", {**base, "sensor_id": motion, "trigger": "motion_detected"}
    )
    assert made.ok and made.content["enabled"] is True
    assert home.call(
        "set_automation_enabled", {"automation_id": made.content["automation_id"], "enabled": False}
    ).ok
    _set(home, "UPDATE devices SET online = 0 WHERE id = ?", motion)
    _refused(
        home,
        "set_automation_enabled",
        {"automation_id": made.content["automation_id"], "enabled": True},
        "sensor_offline",
        PRE,
    )


# ----------------------------------------------------------------- reads
def test_reads_are_ordered_and_searches_are_literal(home: Session) -> None:
    sensor = _first(home, "kind = 'sensor'")
    hist = home.call("get_sensor_readings", {"sensor_id": sensor, "limit": 5}).content
    stamps = [r["recorded_at"] for r in hist["readings"]]
    assert stamps == sorted(stamps, reverse=True) and hist["count"] == 5
    assert (
        hist["readings"][0]["value"]
        == one(home, "SELECT value FROM devices WHERE id=?", sensor) / 10
    )
    assert home.call("search_devices", {"query": "%"}).content == []
    found = home.call("search_devices", {"query": "kitchen", "limit": 100}).content
    assert found and all("Kitchen" in d["name"] or d["room"] == "Kitchen" for d in found)
    ids = [
        d["device_id"]
        for d in home.call("list_devices", {"home_id": "hom_02", "limit": 100}).content
    ]
    assert ids == sorted(ids) and len(ids) == count(
        home, "SELECT count(*) FROM devices WHERE home_id='hom_02'"
    )


def test_hand_written_tasks_exercise_the_rules() -> None:
    tasks = [t for t in prove_gym.get_registry().tasks("iot_devices") if t.id.count("-") == 1]
    assert len(tasks) >= 4
    kinds = {turn.kind for t in tasks for turn in t.turns}
    assert {"normal", "clarify", "abstain"} <= kinds


@pytest.mark.parametrize(
    ("sensor", "value", "state"),
    [
        ("contact", 0, "contact closed"),
        ("contact", 1, "contact open"),
        ("motion", 0, "no motion"),
        ("motion", 1, "motion detected"),
    ],
)
def test_a_binary_sensor_reads_as_words_in_the_listing(
    home: Session, sensor: str, value: int, state: str
) -> None:
    device = _first(home, f"sensor_type = '{sensor}' AND home_id = 'hom_01'")
    _set(home, "UPDATE devices SET value = ? WHERE id = ?", value * 10, device)  # tenths
    listed = home.call("list_devices", {"home_id": "hom_01", "kind": "sensor"})
    [row] = [d for d in listed.content if d["device_id"] == device]
    assert row["state"] == state  # not "contact 0.0 open" for a closed door


def test_v1_a_member_of_one_home_cannot_unlock_another_homes_door() -> None:
    """prove/iot_devices-v1 acts for a member of one home (issue #50: any home's front door)."""
    with IOT.session(seed=0) as plain:
        lock, theirs = rows(
            plain, "SELECT id, home_id FROM devices WHERE kind = 'lock' ORDER BY id"
        )[0]
        mine = one(plain, "SELECT id FROM homes WHERE id != ? ORDER BY id", theirs)
    with IOT.session(seed=0, env_version=1, principal=mine) as member:
        before = member.state_hash()
        refused = member.call("set_lock", {"lock_id": lock, "action": "unlock"})
        assert refused.error_kind == ErrorKind.PERMISSION_DENIED
        assert refused.message is not None and refused.message.startswith(
            f"Rule 'not_your_home' failed: lock '{lock}' is another home's; you act for home '{mine}'"
        )
        assert member.state_hash() == before
    with IOT.session(seed=0, env_version=1, principal=theirs) as owner:
        result = owner.call("set_lock", {"lock_id": lock, "action": "unlock"})
        assert result.error_kind != ErrorKind.PERMISSION_DENIED, result


# ----------------------------------------------- -v2: a clock, scoped lists
# prove/iot_devices-v2 (issue #50 item 2): a call whose effect takes time advances the home's
# clock by its declared duration, and the home moves on meanwhile. Seed 0: hom_01's
# thermostat dev_0005 heats to 22.5 C at 23.4 C (so stands still), its room's temperature
# sensor dev_0007 reads 21.2 C; hom_02's motion sensor dev_0042 runs automation aut_004
# (motion_cleared -> scene scn_008, Movie Night) and reads no motion; the state is at 10:30.
CLOCK = 2


def _clock(session: Session) -> str | None:
    """The clock's time, or None while no call has moved it (the state's own time)."""
    found = rows(session, "SELECT now FROM clock WHERE id = 1")
    return str(found[0][0]) if found else None


def _readings(session: Session, device: str) -> list[tuple[str, int]]:
    return [
        (str(at), int(v))
        for at, v in rows(
            session,
            "SELECT recorded_at, value FROM readings WHERE device_id = ? ORDER BY recorded_at, id",
            device,
        )
    ]


def _motion(session: Session, sensor: str, at: str) -> None:
    """Arrange that ``sensor`` read motion at ``at`` (its newest reading)."""
    _set(session, "INSERT INTO readings VALUES ('rdg_900000', ?, ?, 10)", sensor, at)
    _set(session, "UPDATE devices SET value = 10 WHERE id = ?", sensor)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_v2_lists_only_the_members_home(version: int) -> None:
    """list_homes and search_devices showed every home in -v1 (its member could read another
    home's devices); from -v2 they show only the member's."""
    principal = "hom_01" if version else None
    with IOT.session(seed=0, env_version=version, principal=principal) as s:
        homes = [h["home_id"] for h in s.call("list_homes").content]
        found = {d["device_id"] for d in s.call("search_devices", {"query": "light"}).content}
        theirs = {str(d) for (d,) in rows(s, "SELECT id FROM devices WHERE home_id = 'hom_02'")}
    if version < CLOCK:
        assert homes == ["hom_01", "hom_02"] and found & theirs
    else:
        assert homes == ["hom_01"] and found and not found & theirs


@pytest.mark.parametrize("version", [0, 1, 2])
def test_v2_a_setpoint_call_returns_once_the_room_has_reached_it(version: int) -> None:
    """23.4 C heating to 25.0 C: 16 steps of 0.1 C, one on each whole minute from 10:31, so
    the call takes until 10:46 and the room's sensor reads each minute; -v0 and -v1 only set
    the setpoint (the same state in both)."""
    principal = "hom_01" if version else None
    with IOT.session(seed=0, env_version=version, principal=principal) as s:
        before = _readings(s, "dev_0007")
        seen = s.call("get_device", {"device_id": "dev_0005"}).content["last_seen_at"]
        done = s.call("set_thermostat_setpoint", {"thermostat_id": "dev_0005", "temperature_c": 25})
        assert done.ok, done.message
        after = _readings(s, "dev_0007")
        if version < CLOCK:
            assert done.content["current_temp_c"] == 23.4
            assert done.content["last_seen_at"] == seen  # as sampled
            assert _clock(s) is None and after == before
            return
        assert done.content["current_temp_c"] == 25.0 and done.content["setpoint_c"] == 25.0
        assert _clock(s) == "2026-07-16 10:46:00.000000"
        assert done.content["last_seen_at"] == "2026-07-16T10:46"  # it reported then
        new = after[len(before) :]
        assert [at[11:16] for at, _ in new] == [f"10:{m}" for m in range(31, 47)]
        assert [v for _, v in new] == list(range(213, 229))  # 21.3 .. 22.8 C, 0.1 a minute
        assert rule_violations(s) == []
        # at the setpoint, the same call takes no time and changes nothing
        again = s.state_hash()
        s.call("set_thermostat_setpoint", {"thermostat_id": "dev_0005", "temperature_c": 25})
        assert s.state_hash() == again


def test_v0_and_v1_reach_the_same_state_and_v2_another() -> None:
    hashes = []
    for version, principal in ((0, None), (1, "hom_01"), (2, "hom_01")):
        with IOT.session(seed=0, env_version=version, principal=principal) as s:
            s.call("set_thermostat_setpoint", {"thermostat_id": "dev_0005", "temperature_c": 25})
            s.call("set_blind_position", {"blind_id": "dev_0004", "position": 100})
            hashes.append(s.state_hash())
    assert hashes[0] == hashes[1] != hashes[2]


def test_v2_a_cooler_setpoint_under_heat_takes_no_time() -> None:
    """Heat only warms: 23.4 C with a setpoint of 21.0 stays, and the clock with it."""
    with IOT.session(seed=0, env_version=CLOCK, principal="hom_01") as s:
        done = s.call("set_thermostat_setpoint", {"thermostat_id": "dev_0005", "temperature_c": 21})
        assert done.ok and done.content["current_temp_c"] == 23.4
        assert _clock(s) is None
        cooled = s.call("set_thermostat_mode", {"thermostat_id": "dev_0005", "mode": "cool"})
        assert cooled.content["current_temp_c"] == 21.0  # 24 minutes of cooling
        assert _clock(s) == "2026-07-16 10:54:00.000000"


def test_v2_a_blind_and_a_bolt_take_their_declared_seconds() -> None:
    with IOT.session(seed=0, env_version=CLOCK, principal="hom_01") as s:
        s.call("set_blind_position", {"blind_id": "dev_0004", "position": 100})  # 0 -> 100
        assert _clock(s) == "2026-07-16 10:30:30.000000"
        moved = s.call("set_blind_position", {"blind_id": "dev_0004", "position": 95})  # 2 s
        assert _clock(s) == "2026-07-16 10:30:32.000000"
        assert moved.content["last_seen_at"] == "2026-07-16T10:30"  # shown to the minute
        s.call("set_blind_position", {"blind_id": "dev_0004", "position": 95})  # unmoved
        s.call("set_light_power", {"light_id": _first(s, "kind='light' AND online"), "power": "on"})
        assert _clock(s) == "2026-07-16 10:30:32.000000"  # a light takes no time
        lock = _first(s, "kind='lock' AND home_id='hom_01' AND lock_state='locked' AND online")
        assert s.call("set_lock", {"lock_id": lock, "action": "unlock"}).ok
        assert _clock(s) == "2026-07-16 10:30:35.000000"


@pytest.mark.parametrize("enabled", [True, False])
def test_v2_a_motion_sensor_clears_and_runs_its_automation_once(enabled: bool) -> None:
    """Motion read at 10:29 clears at 10:31 (two minutes on), the first whole minute the clock
    passes then; the enabled automation on motion_cleared runs its scene at that minute,
    once, and a disabled one does not."""
    with IOT.session(seed=0, env_version=CLOCK, principal="hom_02") as s:
        _motion(s, "dev_0042", "2026-07-16 10:29:00.000000")
        if not enabled:
            s.call("set_automation_enabled", {"automation_id": "aut_004", "enabled": False})
        s.call("set_blind_position", {"blind_id": "dev_0055", "position": 100})  # 30 s
        assert one(s, "SELECT value FROM devices WHERE id = 'dev_0042'") == 10  # not yet
        s.call("set_blind_position", {"blind_id": "dev_0055", "position": 0})  # past 10:31
        assert _readings(s, "dev_0042")[-1] == ("2026-07-16 10:31:00.000000", 0)
        [auto] = s.call("list_automations", {"home_id": "hom_02", "enabled": enabled}).content[:1]
        scene = s.call("get_scene", {"scene_id": "scn_008"}).content
        fired = "2026-07-16T10:31" if enabled else None
        assert auto["automation_id"] == "aut_004" and auto["last_triggered_at"] == fired
        assert (scene["last_activated_at"] == "2026-07-16T10:31") == enabled
        blinds = one(
            s, "SELECT group_concat(position) FROM devices WHERE id IN ('dev_0039', 'dev_0040')"
        )
        assert (blinds == "0,0") == enabled  # Movie Night closes them (75 and 25 before)
        # no new motion: later time passes without running it again
        s.call("set_blind_position", {"blind_id": "dev_0055", "position": 100})
        assert (
            s.call("get_scene", {"scene_id": "scn_008"}).content["last_activated_at"]
            == (scene["last_activated_at"])
        )
        assert rule_violations(s) == []


def test_v2_an_automation_whose_scene_cannot_apply_does_not_run() -> None:
    with IOT.session(seed=0, env_version=CLOCK, principal="hom_02") as s:
        _motion(s, "dev_0042", "2026-07-16 10:00:00.000000")
        _set(s, "UPDATE devices SET online = 0 WHERE id = 'dev_0037'")  # a light of scn_008
        s.call("set_blind_position", {"blind_id": "dev_0055", "position": 100})
        s.call("set_blind_position", {"blind_id": "dev_0055", "position": 0})
        assert one(s, "SELECT value FROM devices WHERE id = 'dev_0042'") == 0  # cleared
        assert one(s, "SELECT last_triggered_at FROM automations WHERE id = 'aut_004'") is None


def test_v2_writes_its_timestamps_at_the_clocks_time() -> None:
    with IOT.session(seed=0, env_version=CLOCK, principal="hom_01") as s:
        s.call("set_thermostat_setpoint", {"thermostat_id": "dev_0005", "temperature_c": 25})
        made = s.call(
            "create_scene", {"home_id": "hom_01", "name": "Warm", "device_ids": ["dev_0005"]}
        )
        assert made.content["created_at"] == "2026-07-16T10:46"
        ran = s.call("activate_scene", {"scene_id": made.content["scene_id"]})
        assert ran.content["activated_at"] == "2026-07-16T10:46"


TIMED = st.one_of(
    st.tuples(st.just("set_blind_position"), st.integers(0, 100)),
    st.tuples(st.just("set_thermostat_setpoint"), st.integers(30, 56).map(lambda h: h / 2)),
    st.tuples(st.just("set_thermostat_mode"), st.sampled_from(["off", "heat", "cool", "auto"])),
    st.tuples(st.just("set_lock"), st.sampled_from(["lock", "unlock"])),
    st.tuples(st.just("activate_scene"), st.sampled_from(["scn_001", "scn_002", "scn_003"])),
)


def _play(calls: list[tuple[str, Any]]) -> tuple[str, list[str | None], list[int], list[str]]:
    """Play ``calls`` under -v2 for hom_01: the final state hash, the clock after each call,
    every temperature dev_0005 and dev_0007 went through (tenths), and the rules broken."""
    with IOT.session(seed=0, env_version=CLOCK, principal="hom_01") as s:
        lock = _first(s, "kind='lock' AND home_id='hom_01' AND online AND lock_state != 'jammed'")
        args = {
            "set_blind_position": lambda v: {"blind_id": "dev_0004", "position": v},
            "set_thermostat_setpoint": lambda v: {"thermostat_id": "dev_0005", "temperature_c": v},
            "set_thermostat_mode": lambda v: {"thermostat_id": "dev_0005", "mode": v},
            "set_lock": lambda v: {"lock_id": lock, "action": v},
            "activate_scene": lambda v: {"scene_id": v},
        }
        clocks, temperatures = [], []
        for tool, value in calls:
            s.call(tool, args[tool](value))
            clocks.append(_clock(s))
            temperatures.append(one(s, "SELECT current_temp_c FROM devices WHERE id = 'dev_0005'"))
        temperatures += [v for _, v in _readings(s, "dev_0007")]
        return s.state_hash(), clocks, temperatures, rule_violations(s)


# the setpoints scenes scn_001..scn_003 give dev_0005 (tenths)
SCENE_SETPOINTS = {
    int(float(v) * 10)
    for (v,) in rows(
        IOT.session(seed=0),
        "SELECT value FROM scene_actions WHERE device_id = 'dev_0005' AND attribute = 'setpoint_c'",
    )
}


@FEW
@given(calls=st.lists(TIMED, max_size=6))
def test_v2_time_only_moves_forward_and_temperatures_stay_between_start_and_setpoints(
    calls: list[tuple[str, Any]],
) -> None:
    """Whatever the calls: the clock never goes back, dev_0005's temperature and its room
    sensor's new readings stay within what they started at and the setpoints they were
    given, the rules hold, and the same calls give the same bytes."""
    state, clocks, temperatures, broken = _play(calls)
    times = [c or "2026-07-16 10:30:00.000000" for c in clocks]
    assert times == sorted(times)
    given_ = {int(v * 10) for tool, v in calls if tool == "set_thermostat_setpoint"}
    points = given_ | SCENE_SETPOINTS | {225, 234, 212}
    moved = temperatures[: len(calls)] + temperatures[len(calls) + 24 :]  # beyond the sample
    assert all(min(points) <= t <= max(points) for t in moved), (moved, points)
    assert broken == []
    assert _play(calls)[:3] == (state, clocks, temperatures)  # same state, same calls: same bytes


def test_v2_the_longest_call_is_bounded_by_the_setpoint_range() -> None:
    """The most time one call can take: a thermostat across its whole setpoint range (15 to
    28 C for dev_0005), 0.1 C a minute; the call succeeds within its work budget and writes
    at most a reading a minute per sensor of the room."""
    with IOT.session(seed=0, env_version=CLOCK, principal="hom_01") as s:
        s.call("set_thermostat_mode", {"thermostat_id": "dev_0005", "mode": "auto"})  # 23.4 -> 22.5
        start = count(s, "SELECT count(*) FROM readings")
        down = s.call("set_thermostat_setpoint", {"thermostat_id": "dev_0005", "temperature_c": 15})
        up = s.call("set_thermostat_setpoint", {"thermostat_id": "dev_0005", "temperature_c": 28})
        assert down.ok and up.ok, (down.message, up.message)
        assert _clock(s) == "2026-07-16 14:04:00.000000"  # 10:39, then 75 and 130 minutes on
        assert count(s, "SELECT count(*) FROM readings") - start <= 75 + 130
        assert rule_violations(s) == []
