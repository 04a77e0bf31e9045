"""Plugins: discovery through the entry-point group, third-party servers, loud failures."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

import prove_gym
from prove_gym import Registry, hookimpl
from prove_gym.registry import PluginError

THIRD_PARTY = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "prove-weather-demo"
        version = "0.0.1"

        [project.entry-points.prove_gym]
        weather = "prove_weather_demo"

        [tool.setuptools]
        packages = ["prove_weather_demo"]
    """,
    "prove_weather_demo/__init__.py": '''
        from __future__ import annotations

        from sqlalchemy import Float, String, bindparam, select
        from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

        from prove_gym import Entity, NotFound, SampleContext, Server, Task, ToolContext, hookimpl
        from prove_gym.server import Query, TypedDict
        from typing import Annotated


        class Base(DeclarativeBase):
            pass


        class City(Base):
            __tablename__ = "cities"
            id: Mapped[str] = mapped_column(String(8), primary_key=True)
            name: Mapped[str] = mapped_column(String(40))
            temp_c: Mapped[float] = mapped_column(Float)


        def sample(ctx: SampleContext) -> None:
            for i in range(5):
                ctx.db.add(City(id=f"c{i}", name=ctx.fake.city(), temp_c=round(ctx.rng.uniform(-5, 30), 1)))


        server = Server("weather", version="0.0.1", base=Base, sampler=sample, description="Weather.")
        CITY = Query(select(City.name, City.temp_c).where(City.id == bindparam("id")))
        CITY_IDS = Query(select(City.id).order_by(City.id))


        class Weather(TypedDict):
            city: str
            temp_c: float


        @server.tool(returns="city", phrasings=["Weather in {city_id}?", "How warm is {city_id}?"])
        def get_weather(ctx: ToolContext, city_id: Annotated[str, Entity("city")]) -> Weather:
            """Current temperature of a city.

            Args:
                city_id: The city, such as "c1".
            """
            city = ctx.sql.first(CITY, id=city_id)
            if city is None:
                raise NotFound(f"No city {city_id!r}.")
            return {"city": city.name, "temp_c": city.temp_c}


        @server.entity("city", key="city_id")
        def cities(ctx: ToolContext) -> list[dict]:
            return [{"city_id": c} for c in ctx.sql.scalars(CITY_IDS)]


        @hookimpl
        def prove_gym_servers() -> list[Server]:
            return [server]


        @hookimpl
        def prove_gym_tasks(server: Server) -> list[Task] | None:
            if server.name != "weather":
                return None
            return [Task(id="w1", servers=["weather"], seed=3, turns=[{"user": "How warm is c1?",
                     "steps": [{"id": "s1", "name": "get_weather", "arguments": {"city_id": "c1"}}]}])]
    ''',
}

CHECK = """
import gymnasium, prove_gym
from gymnasium.utils.env_checker import check_env
from prove_gym.eval import OraclePolicy
reg = prove_gym.get_registry()
assert "weather" in reg.servers and "calendar" in reg.servers, list(reg.servers)
assert reg.get_server("weather").problems() == []
env = gymnasium.make("prove/weather-v0")
check_env(env.unwrapped)
obs, info = env.reset(seed=0)
policy = OraclePolicy().start(env.unwrapped.episode)
obs, r, term, trunc, info = env.step(policy.act(env.unwrapped.episode))
print("RESULT", obs.replace(chr(10), " "))
"""


@pytest.mark.slow
def test_a_pip_installed_third_party_plugin_appears_in_registry_and_gymnasium(
    tmp_path: Path,
) -> None:
    pkg = tmp_path / "pkg"
    for rel, text in THIRD_PARTY.items():
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    site = tmp_path / "site"
    pip = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            str(pkg),
        ],
        capture_output=True,
        text=True,
    )
    assert pip.returncode == 0, pip.stderr
    assert list(site.glob("prove_weather_demo-*.dist-info/entry_points.txt"))
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "RESULT <tool_response>" in out.stdout and "temp_c" in out.stdout


def test_builtin_servers_come_from_the_entry_point_group() -> None:
    from importlib.metadata import entry_points

    names = {ep.name for ep in entry_points(group="prove_gym")}
    assert set(prove_gym.get_registry().servers) <= names | {"weather"}
    assert "calendar" in names


def test_a_misspelled_hook_fails_loudly() -> None:
    plugin = types.ModuleType("typo_plugin")

    @hookimpl
    def prove_gym_server() -> list:  # missing the final "s"
        return []

    plugin.prove_gym_server = prove_gym_server
    with pytest.raises(PluginError, match=r"prove_gym_server.*misspelled"):
        Registry(load_entrypoints=False).register(plugin)


def test_an_undecorated_misspelling_fails_too() -> None:
    plugin = types.SimpleNamespace(prove_gym_tasks_for=lambda server: None)
    with pytest.raises(PluginError, match="prove_gym_tasks_for"):
        Registry(load_entrypoints=False).register(plugin)


def test_two_plugins_cannot_provide_the_same_server_name() -> None:
    calendar = prove_gym.get_server("calendar")

    class A:
        @hookimpl
        def prove_gym_servers(self):
            return [calendar]

    class B(A):
        pass

    reg = Registry(load_entrypoints=False)
    reg.register(A(), name="a")
    reg.register(B(), name="b")
    with pytest.raises(PluginError, match="'calendar' is provided by both"):
        _ = reg.servers


def test_unknown_server_lists_the_installed_ones() -> None:
    with pytest.raises(KeyError, match=r"installed servers: .*calendar"):
        prove_gym.get_server("calender")


def test_a_runtime_plugin_can_add_tasks_to_a_builtin_server() -> None:
    reg = Registry()
    base = len(reg.tasks("calendar"))
    extra = reg.tasks("calendar")[0].model_copy(update={"id": "extra-1"})

    class Extra:
        @hookimpl
        def prove_gym_tasks(self, server):
            return [extra] if server.name == "calendar" else None

    reg.register(Extra())
    ids = [t.id for t in reg.tasks("calendar")]
    assert len(ids) == base + 1 and "extra-1" in ids
    assert ids == sorted(ids), "tasks are ordered by id, not by plugin load order"


def test_importing_a_plugin_module_before_prove_gym_loses_nothing() -> None:
    code = (
        "import prove_plugins.calendar.models\n"
        "import gymnasium, prove_gym\n"
        "assert 'calendar' in prove_gym.get_registry().servers\n"
        "print(gymnasium.make('prove/calendar-v0').reset(seed=0)[1]['task_id'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("calendar-")


def test_import_prove_gym_registers_env_ids_without_importing_plugins() -> None:
    code = (
        "import sys, gymnasium, prove_gym\n"
        "print(sorted(m for m in sys.modules if m.startswith('prove_plugins')))\n"
        "print('prove/calendar-v0' in gymnasium.registry)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "True"]


LOADED = "import json, sys; print(json.dumps(sorted(m for m in sys.modules if m.startswith('prove_plugins.') and m.count('.') == 1)))"


def _fresh(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\n{LOADED}"], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_fresh_process_builds_only_the_server_it_is_asked_for() -> None:
    play = (
        "import gymnasium, prove_gym\n"
        "env = gymnasium.make('prove/calendar-v0')\n"
        "env.reset(options={'task_id': 'calendar-001'})\n"  # offers no other server's tools
        'env.step(\'<tool_call>{"name": "list_calendars", "arguments": {}}</tool_call>\')\n'
    )
    assert _fresh(play) == ["prove_plugins.calendar"]
    assert _fresh("import prove_gym, gymnasium; gymnasium.make('prove/banking-v0')") == [
        "prove_plugins.banking"
    ]
    assert _fresh("import prove_gym") == []


def test_a_task_with_distractors_loads_the_servers_it_names_and_no_other() -> None:
    play = (
        "import prove_gym\n"
        "task = prove_gym.Task(id='t', servers=['calendar'], tools=['calendar.list_calendars', "
        "'maps.geocode'], turns=[{'user': 'Hi.'}])\n"
        "prove_gym.Episode(task).step('Hello.')\n"
    )
    assert _fresh(play) == ["prove_plugins.calendar", "prove_plugins.maps"]


def test_server_names_come_from_the_entry_points_without_importing_a_plugin() -> None:
    code = "import json, prove_gym; print(json.dumps(prove_gym.get_registry().server_names))"
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\n{LOADED}"], capture_output=True, text=True, check=True
    )
    names, loaded = out.stdout.strip().splitlines()[-2:]
    assert json.loads(names) == sorted(prove_gym.get_registry().servers)
    assert json.loads(loaded) == []


def test_import_prove_gym_leaves_gymnasium_unimported_and_registers_when_it_is() -> None:
    code = (
        "import json, sys, prove_gym\n"
        "before = 'gymnasium' in sys.modules\n"
        "prove_gym.get_server('banking')  # a plugin loaded before gymnasium is imported\n"
        "hooks = [type(f).__name__ for f in sys.meta_path]\n"
        "import gymnasium\n"
        "print(json.dumps([before, 'prove/calendar-v0' in gymnasium.registry,\n"
        "    'prove/banking-v0' in gymnasium.registry, hooks.count('_AfterGymnasiumImport'),\n"
        "    [type(f).__name__ for f in sys.meta_path].count('_AfterGymnasiumImport'),\n"
        "    type(gymnasium.__loader__).__name__, type(gymnasium.__spec__.loader).__name__]))\n"
        "print(gymnasium.make('prove/banking-v0').reset(seed=0)[1]['task_id'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    facts, task_id = out.stdout.strip().splitlines()[-2:]
    assert json.loads(facts) == [
        False,  # serving MCP or listing servers pays nothing for Gymnasium and NumPy
        True,
        True,
        1,  # one hook waited for gymnasium...
        0,  # ...and left once it had run
        "SourceFileLoader",  # gymnasium keeps its own loader
        "SourceFileLoader",
    ]
    assert task_id.startswith("banking-")
