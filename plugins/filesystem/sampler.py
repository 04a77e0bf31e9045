"""A realistic Unix home directory: size 1 gives about 300 files and directories.

The tree holds a small system part (``/etc``, ``/tmp``, ``/var/log``, an
unreadable ``/root``) and the user's home: dotfiles and ``.ssh``, documents,
software projects with source, tests and logs, photos with their metadata,
downloads (with a few duplicates), music playlists. A few nodes are
read-only on purpose (a tax archive, an old photo archive, root-owned system
files) so that permissions matter.
"""

from __future__ import annotations

import datetime as dt
import random
import re

from prove_gym.server import SampleContext

from .models import DirStackEntry, Node, Shell

__all__ = ["sample_filesystem"]

PROJECT_NAMES = [
    "weather-dashboard",
    "invoice-parser",
    "budget-tracker",
    "chat-bot",
    "photo-sorter",
    "api-gateway",
    "todo-cli",
    "blog-engine",
    "recipe-finder",
    "habit-tracker",
    "log-analyzer",
    "url-shortener",
]
NOUNS = [
    "invoice",
    "user",
    "order",
    "report",
    "forecast",
    "session",
    "payment",
    "message",
    "config",
    "cache",
    "record",
    "event",
    "photo",
    "account",
    "task",
    "metric",
]
VERBS = ["load", "parse", "save", "validate", "fetch", "render", "compute", "export", "sync"]
TRIP_PLACES = [
    "Lisbon",
    "Kyoto",
    "Yosemite",
    "Barcelona",
    "Iceland",
    "Lake Tahoe",
    "New Orleans",
    "Vancouver",
    "Amalfi Coast",
    "Banff",
    "Prague",
    "Grand Canyon",
]
FAMILY_EVENTS = ["Birthday", "Wedding", "Graduation", "Christmas", "Thanksgiving", "Camping"]
CAMERAS = ["iPhone 14 Pro", "Pixel 8", "Canon EOS R6", "Sony A7 III", "Fujifilm X-T4", "iPhone 12"]
RECIPES = [
    ("Lemon garlic pasta", ["spaghetti", "lemon", "garlic", "parmesan", "olive oil"]),
    ("Chicken tikka masala", ["chicken thighs", "yogurt", "garam masala", "tomatoes", "cream"]),
    ("Banana bread", ["ripe bananas", "flour", "butter", "brown sugar", "eggs"]),
    ("Shakshuka", ["eggs", "tomatoes", "red pepper", "cumin", "feta"]),
    ("Mushroom risotto", ["arborio rice", "mushrooms", "shallots", "white wine", "stock"]),
    ("Thai green curry", ["coconut milk", "green curry paste", "tofu", "basil", "lime"]),
    ("Guacamole", ["avocados", "lime", "red onion", "cilantro", "jalapeno"]),
    ("Pancakes", ["flour", "milk", "eggs", "baking powder", "maple syrup"]),
]
EXPENSE_ITEMS = [
    ("Groceries", "Whole Foods"),
    ("Groceries", "Trader Joe's"),
    ("Transport", "Uber"),
    ("Transport", "Shell gas station"),
    ("Utilities", "Electric bill"),
    ("Utilities", "Internet"),
    ("Dining", "Cafe Luna"),
    ("Dining", "Pizza Express"),
    ("Health", "Pharmacy"),
    ("Entertainment", "Netflix"),
    ("Entertainment", "Cinema"),
    ("Home", "IKEA"),
]
SONGS = [
    "Bohemian Rhapsody - Queen",
    "Hotel California - Eagles",
    "Blinding Lights - The Weeknd",
    "Dreams - Fleetwood Mac",
    "Take Five - Dave Brubeck",
    "Clair de Lune - Debussy",
    "Redbone - Childish Gambino",
    "Superstition - Stevie Wonder",
    "Midnight City - M83",
    "Harvest Moon - Neil Young",
    "So What - Miles Davis",
    "Teardrop - Massive Attack",
]
LOG_LINES = [
    ("INFO", "http", "GET /api/{noun}s 200 {ms}ms"),
    ("INFO", "http", "POST /api/{noun}s 201 {ms}ms"),
    ("INFO", "worker", "Processed {n} {noun}s in {sec}s"),
    ("INFO", "scheduler", "Job sync_{noun}s finished"),
    ("DEBUG", "cache", "Cache hit for key {noun}:{n}"),
    ("WARNING", "cache", "Cache miss ratio 0.{n} above threshold 0.30"),
    ("WARNING", "http", "Slow request GET /api/{noun}s took {ms}ms"),
    ("ERROR", "db", "Connection refused: postgres://db.internal:5432 (retry {r}/5)"),
    ("ERROR", "worker", "Failed to process {noun} {n}: ValueError: missing field 'id'"),
    ("ERROR", "http", "GET /api/{noun}s/{n} 500 Internal Server Error"),
]
SYSLOG_LINES = [
    "systemd[1]: Started Daily apt download activities.",
    "systemd[1]: Starting Cleanup of Temporary Directories...",
    "kernel: [UFW BLOCK] IN=wlp2s0 OUT= SRC=192.168.1.{n} PROTO=UDP DPT=5353",
    "NetworkManager[712]: <info> device (wlp2s0): state change: activated",
    "cron[845]: (root) CMD (test -x /usr/sbin/anacron || run-parts /etc/cron.daily)",
    "sshd[{n}]: Accepted publickey for {user} from 10.0.0.{r} port 52{n}",
    "kernel: usb 1-2: new high-speed USB device number {r} using xhci_hcd",
]


class _Tree:
    """Collects nodes with sequential ids ``n_00001``, ``n_00002``, ..."""

    def __init__(self, ctx: SampleContext, user: str) -> None:
        self.ctx = ctx
        self.user = user
        self.nodes: list[Node] = []
        self.names: dict[str | None, set[str]] = {}

    def _when(self, max_days: int = 400) -> dt.datetime:
        rng = self.ctx.rng
        delta = dt.timedelta(days=rng.randint(1, max_days), minutes=rng.randint(0, 24 * 60 - 1))
        return (self.ctx.now - delta).replace(second=0, microsecond=0)

    def _add(self, parent: Node | None, name: str, kind: str, **kw: object) -> Node:
        taken = self.names.setdefault(parent.id if parent is not None else None, set())
        stem, dot, ext = name.rpartition(".") if "." in name.lstrip(".") else (name, "", "")
        n = 1
        while name in taken:
            n += 1
            name = f"{stem}-{n}{dot}{ext}"
        taken.add(name)
        node = Node(
            id=f"n_{len(self.nodes) + 1:05d}",
            parent_id=parent.id if parent is not None else None,
            name=name,
            kind=kind,
            **kw,
        )
        self.nodes.append(node)
        return node

    def dir(
        self, parent: Node | None, name: str, *, mode: int = 0o755, owner: str | None = None
    ) -> Node:
        return self._add(
            parent,
            name,
            "dir",
            owner=owner or self.user,
            mode=mode,
            size=0,
            content="",
            modified=self._when(),
        )

    def file(
        self,
        parent: Node,
        name: str,
        content: str,
        *,
        mode: int = 0o644,
        owner: str | None = None,
        max_days: int = 400,
    ) -> Node:
        return self._add(
            parent,
            name,
            "file",
            owner=owner or self.user,
            mode=mode,
            size=len(content.encode()),
            content=content,
            modified=self._when(max_days),
        )


def _lines(*parts: str) -> str:
    return "\n".join(parts) + "\n"


# ------------------------------------------------------------------ content
def _python_module(rng: random.Random, package: str, noun: str) -> str:
    verb1, verb2 = rng.sample(VERBS, 2)
    other = rng.choice([n for n in NOUNS if n != noun])
    limit = rng.choice([10, 25, 50, 100, 500])
    return _lines(
        f'"""{noun.capitalize()} handling for {package}."""',
        "",
        "from __future__ import annotations",
        "",
        "import json",
        "import logging",
        "from dataclasses import dataclass",
        "from pathlib import Path",
        "",
        "log = logging.getLogger(__name__)",
        f"MAX_{noun.upper()}S = {limit}",
        "",
        "",
        "@dataclass",
        f"class {noun.capitalize()}:",
        "    id: int",
        "    name: str",
        f"    {other}_id: int | None = None",
        "",
        "",
        f"def {verb1}_{noun}s(path: Path) -> list[{noun.capitalize()}]:",
        f'    """{verb1.capitalize()} {noun}s from a JSON file."""',
        "    with open(path, encoding='utf-8') as fh:",
        "        raw = json.load(fh)",
        f"    items = [{noun.capitalize()}(**row) for row in raw][:MAX_{noun.upper()}S]",
        f'    log.info("{verb1} %d {noun}s from %s", len(items), path)',
        "    return items",
        "",
        "",
        f"def {verb2}_{noun}(item: {noun.capitalize()}) -> dict:",
        "    # TODO: handle missing names",
        "    if not item.name:",
        f'        raise ValueError("{noun} without a name")',
        f'    return {{"id": item.id, "name": item.name.strip(), "{other}_id": item.{other}_id}}',
    )


def _python_test(rng: random.Random, package: str, module: str, noun: str) -> str:
    return _lines(
        f"from {package}.{module} import {noun.capitalize()}",
        "",
        "",
        f"def test_{noun}_keeps_its_name():",
        f'    item = {noun.capitalize()}(id={rng.randint(1, 99)}, name="sample")',
        '    assert item.name == "sample"',
        "",
        "",
        f"def test_{noun}_ids_are_ints():",
        f'    assert isinstance({noun.capitalize()}(id=1, name="x").id, int)',
    )


def _js_module(rng: random.Random, noun: str) -> str:
    verb = rng.choice(VERBS)
    return _lines(
        "'use strict';",
        "",
        "const fs = require('fs');",
        "",
        f"const DEFAULT_LIMIT = {rng.choice([10, 20, 50])};",
        "",
        f"function {verb}{noun.capitalize()}s(path, limit = DEFAULT_LIMIT) {{",
        "  const raw = JSON.parse(fs.readFileSync(path, 'utf8'));",
        "  // TODO: validate the schema before slicing",
        "  return raw.slice(0, limit);",
        "}",
        "",
        f"module.exports = {{ {verb}{noun.capitalize()}s }};",
    )


def _go_module(rng: random.Random, package: str, noun: str) -> str:
    verb = rng.choice(VERBS).capitalize()
    return _lines(
        f"package {package}",
        "",
        'import "fmt"',
        "",
        f"type {noun.capitalize()} struct {{",
        "\tID   int",
        "\tName string",
        "}",
        "",
        f"// {verb}{noun.capitalize()} returns a printable summary.",
        f"func {verb}{noun.capitalize()}(x {noun.capitalize()}) string {{",
        "\t// TODO: localise this message",
        f'\treturn fmt.Sprintf("{noun} %d: %s", x.ID, x.Name)',
        "}",
    )


def _log(ctx: SampleContext, project: str, n: int, errors_only: bool = False) -> str:
    rng = ctx.rng
    t = ctx.now - dt.timedelta(days=rng.randint(1, 20), hours=rng.randint(0, 23))
    out = [f"{t:%Y-%m-%d %H:%M:%S},000 INFO    [main] Starting {project} v1.{rng.randint(0, 9)}.0"]
    pool = [x for x in LOG_LINES if x[0] == "ERROR"] if errors_only else LOG_LINES
    for _ in range(n):
        t += dt.timedelta(seconds=rng.randint(1, 900), milliseconds=rng.randint(0, 999))
        level, source, text = rng.choice(pool)
        msg = text.format(
            noun=rng.choice(NOUNS),
            n=rng.randint(2, 98),
            ms=rng.randint(3, 2400),
            sec=round(rng.uniform(0.1, 9.9), 1),
            r=rng.randint(1, 5),
        )
        out.append(f"{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d} {level:<8}[{source}] {msg}")
    return "\n".join(out) + "\n"


def _photo(rng: random.Random, taken: dt.datetime, place: str) -> str:
    w, h = rng.choice([(4032, 3024), (6000, 4000), (3024, 4032), (4000, 6000)])
    lat, lon = round(rng.uniform(-60, 65), 5), round(rng.uniform(-150, 150), 5)
    return _lines(
        "JPEG image data, EXIF standard",
        f"Dimensions: {w}x{h}",
        f"Camera: {rng.choice(CAMERAS)}",
        f"Taken: {taken:%Y-%m-%d %H:%M:%S}",
        f"Location: {place} ({lat}, {lon})",
        f"ISO: {rng.choice([50, 100, 200, 400, 800, 1600])}",
        f"Exposure: 1/{rng.choice([60, 125, 250, 500, 1000])}s f/{rng.choice(['1.8', '2.8', '4.0'])}",
    )


# ------------------------------------------------------------------ builder
def sample_filesystem(ctx: SampleContext) -> None:
    """Fill an empty filesystem database (see the module docstring for sizes)."""
    rng, fake, now = ctx.rng, ctx.fake, ctx.now
    first, last = fake.first_name(), fake.last_name()
    user = re.sub(r"[^a-z]", "", first.lower()) or "user"
    full_name = f"{first} {last}"
    email = f"{user}.{re.sub(r'[^a-z]', '', last.lower())}@{fake.free_email_domain()}"
    hostname = f"{user}-{rng.choice(['laptop', 'thinkpad', 'macbook', 'desktop', 'xps'])}"
    t = _Tree(ctx, user)

    # --- system part, owned by root
    root = t.dir(None, "", owner="root")
    etc = t.dir(root, "etc", owner="root")
    t.file(etc, "hostname", hostname + "\n", owner="root")
    t.file(
        etc,
        "hosts",
        _lines(
            "127.0.0.1\tlocalhost",
            f"127.0.1.1\t{hostname}",
            "192.168.1.20\tnas.local",
            "::1\tip6-localhost ip6-loopback",
        ),
        owner="root",
    )
    t.file(
        etc,
        "timezone",
        rng.choice(["Europe/Lisbon", "America/New_York", "Asia/Tokyo"]) + "\n",
        owner="root",
    )
    t.file(
        etc,
        "fstab",
        _lines(
            "# <file system> <mount point> <type> <options> <dump> <pass>",
            "UUID=3f1c2a9e-7d41-4b8e-9a51-0c2d7e6f9b10 /     ext4 errors=remount-ro 0 1",
            "UUID=8B2E-1F4A                            /boot vfat umask=0077        0 1",
        ),
        owner="root",
    )
    t.file(
        etc,
        "shadow",
        f"root:*:19700:0:99999:7:::\n{user}:$6$rounds$...:19700:0:99999:7:::\n",
        owner="root",
        mode=0o640,
    )
    tmp = t.dir(root, "tmp", owner="root", mode=0o777)
    t.file(tmp, f"pip-build-{rng.randint(1000, 9999)}.log", _log(ctx, "pip", 6))
    t.file(tmp, "clipboard.txt", fake.sentence(nb_words=12) + "\n")
    var = t.dir(root, "var", owner="root")
    varlog = t.dir(var, "log", owner="root")
    syslog = []
    ts = now - dt.timedelta(days=2)
    for _ in range(60 * ctx.size):
        ts += dt.timedelta(seconds=rng.randint(20, 3000))
        line = rng.choice(SYSLOG_LINES).format(
            n=rng.randint(10, 99), r=rng.randint(2, 9), user=user
        )
        syslog.append(f"{ts:%b %d %H:%M:%S} {hostname} {line}")
    t.file(varlog, "syslog", "\n".join(syslog) + "\n", owner="root", max_days=1)
    t.file(
        varlog,
        "auth.log",
        "sshd[811]: Server listening on 0.0.0.0 port 22.\n",
        owner="root",
        mode=0o640,
        max_days=1,
    )
    root_home = t.dir(root, "root", owner="root", mode=0o700)
    t.file(root_home, ".bashrc", "export EDITOR=vim\n", owner="root")
    home_parent = t.dir(root, "home", owner="root")

    # --- the user's home
    home = t.dir(home_parent, user)
    t.file(
        home,
        ".bashrc",
        _lines(
            "# ~/.bashrc: executed by bash for non-login shells.",
            "export EDITOR=nvim",
            'export PATH="$HOME/.local/bin:$PATH"',
            "alias ll='ls -alF'",
            "alias gs='git status'",
            "alias proj='cd ~/Projects'",
            "HISTSIZE=10000",
        ),
    )
    t.file(
        home,
        ".profile",
        _lines("# ~/.profile", 'if [ -f "$HOME/.bashrc" ]; then', '    . "$HOME/.bashrc"', "fi"),
    )
    t.file(
        home,
        ".gitconfig",
        _lines(
            "[user]",
            f"\tname = {full_name}",
            f"\temail = {email}",
            "[init]",
            "\tdefaultBranch = main",
            "[pull]",
            "\trebase = true",
        ),
    )
    t.file(
        home,
        ".bash_history",
        _lines(
            "ls -la",
            "cd Projects",
            "git pull",
            "python -m pytest",
            "du -sh Pictures",
            "grep -r TODO src",
            "cd ~",
        ),
        mode=0o600,
    )
    ssh = t.dir(home, ".ssh", mode=0o700)
    t.file(
        ssh,
        "config",
        _lines(
            "Host nas",
            "    HostName 192.168.1.20",
            f"    User {user}",
            "Host github.com",
            "    IdentityFile ~/.ssh/id_ed25519",
        ),
        mode=0o600,
    )
    key = fake.sha256()
    t.file(
        ssh,
        "id_ed25519",
        _lines(
            "-----BEGIN OPENSSH PRIVATE KEY-----",
            key[:64],
            key[:40],
            "-----END OPENSSH PRIVATE KEY-----",
        ),
        mode=0o600,
    )
    t.file(ssh, "id_ed25519.pub", f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5{key[:43]} {email}\n")
    t.file(
        ssh,
        "known_hosts",
        _lines(
            f"github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5{fake.sha1()}",
            f"192.168.1.20 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5{fake.sha1()}",
        ),
    )
    config = t.dir(home, ".config")
    nvim = t.dir(config, "nvim")
    t.file(nvim, "init.vim", _lines("set number", "set expandtab", "set shiftwidth=4", "syntax on"))
    code = t.dir(config, "Code")
    t.file(
        code,
        "settings.json",
        _lines(
            "{",
            '  "editor.fontSize": 14,',
            '  "editor.formatOnSave": true,',
            f'  "workbench.colorTheme": "{rng.choice(["Monokai", "Solarized Dark", "GitHub Light"])}"',
            "}",
        ),
    )
    t.file(
        home,
        "notes.txt",
        "\n".join(fake.sentence(nb_words=10) for _ in range(rng.randint(4, 9))) + "\n",
    )
    t.file(
        home,
        "todo.md",
        _lines(
            "# TODO",
            *(f"- [{rng.choice([' ', ' ', 'x'])}] {fake.sentence(nb_words=6)}" for _ in range(8)),
        ),
    )

    # --- Documents
    docs = t.dir(home, "Documents")
    work = t.dir(docs, "Work")
    people = [fake.name() for _ in range(10)]
    for i in range(rng.randint(6, 9) * ctx.size):
        day = (now - dt.timedelta(days=rng.randint(2, 200))).date()
        attendees = rng.sample(people, 3)
        t.file(
            work,
            f"meeting-notes-{day.isoformat()}.md"
            if i % 2 == 0
            else f"{rng.choice(['standup', 'retro', 'planning', 'one-on-one'])}-{day.isoformat()}.md",
            _lines(
                f"# Meeting notes {day.isoformat()}",
                "",
                f"Attendees: {', '.join(attendees)}",
                "",
                "## Discussion",
                fake.paragraph(nb_sentences=4),
                "",
                "## Action items",
                *(f"- [ ] {rng.choice(attendees)}: {fake.sentence(nb_words=7)}" for _ in range(3)),
            ),
        )
    quarter = rng.randint(1, 4)
    t.file(
        work,
        f"Q{quarter}-report.txt",
        "\n\n".join(fake.paragraph(nb_sentences=6) for _ in range(4)) + "\n",
    )
    t.file(
        work,
        "budget.csv",
        "team,quarter,planned,spent\n"
        + "".join(
            f"{team},Q{q},{rng.randint(20, 90) * 1000},{rng.randint(15, 95) * 1000}\n"
            for team in ("engineering", "design", "marketing", "sales")
            for q in range(1, 5)
        ),
    )
    t.file(
        work,
        "contacts.csv",
        "name,email,company\n"
        + "".join(
            f"{p},{p.lower().replace(' ', '.')}@{fake.domain_name()},{fake.company().replace(',', '')}\n"
            for p in people
        ),
    )
    personal = t.dir(docs, "Personal")
    t.file(
        personal,
        "resume.md",
        _lines(
            f"# {full_name}",
            email,
            "",
            "## Experience",
            *(
                f"- {fake.job()} at {fake.company()} ({y}-{y + rng.randint(1, 4)})"
                for y in sorted(rng.sample(range(2008, 2022), 3))
            ),
            "",
            "## Skills",
            "Python, SQL, Docker, public speaking",
        ),
    )
    for _ in range(rng.randint(2, 4)):
        to = fake.name()
        t.file(
            personal,
            f"letter-to-{to.split()[-1].lower()}.txt",
            f"Dear {to},\n\n{fake.paragraph(nb_sentences=5)}\n\n{fake.paragraph(nb_sentences=3)}\n\nBest regards,\n{full_name}\n",
        )
    t.file(personal, "passwords-hint.txt", "The wifi password is on the fridge.\n", mode=0o600)
    finance = t.dir(docs, "Finance")
    year = now.year - 1
    rows = ["date,description,amount,category"]
    d = dt.date(year, 1, 1)
    for _ in range(40 * ctx.size):
        d += dt.timedelta(days=rng.randint(1, 12))
        cat, what = rng.choice(EXPENSE_ITEMS)
        rows.append(f"{d.isoformat()},{what},{rng.randint(3, 250)}.{rng.randint(0, 99):02d},{cat}")
    t.file(finance, f"expenses-{year}.csv", "\n".join(rows) + "\n")
    taxes = t.dir(finance, "taxes")
    for y in (year - 2, year - 1):
        t.file(
            taxes,
            f"tax-return-{y}.txt",
            _lines(
                f"Tax return {y}",
                f"Name: {full_name}",
                f"Gross income: {rng.randint(45, 160) * 1000}",
                f"Refund: {rng.randint(0, 3000)}",
                "Status: filed",
            ),
            mode=0o444,
        )
    taxes.mode = 0o555
    recipes = t.dir(docs, "Recipes")
    for title, ingredients in rng.sample(RECIPES, rng.randint(3, 5)):
        t.file(
            recipes,
            title.lower().replace(" ", "-") + ".md",
            _lines(
                f"# {title}",
                "",
                f"Serves {rng.randint(2, 6)}",
                "",
                "## Ingredients",
                *(f"- {x}" for x in ingredients),
                "",
                "## Steps",
                fake.paragraph(nb_sentences=4),
            ),
        )

    # --- Projects
    projects = t.dir(home, "Projects")
    picked = rng.sample(PROJECT_NAMES, min(len(PROJECT_NAMES), 3 + ctx.size))
    for proj in picked:
        lang = rng.choice(["python", "python", "javascript", "go"])
        p = t.dir(projects, proj)
        pkg = proj.replace("-", "_")
        t.file(
            p,
            "README.md",
            _lines(
                f"# {proj}",
                "",
                fake.paragraph(nb_sentences=3),
                "",
                "## Usage",
                "",
                "```",
                {"python": f"python -m {pkg}", "javascript": "npm start", "go": "go run ."}[lang],
                "```",
                "",
                "## License",
                "MIT",
            ),
        )
        t.file(
            p,
            ".gitignore",
            {
                "python": "__pycache__/\n*.pyc\n.venv/\n",
                "javascript": "node_modules/\ndist/\n",
                "go": "bin/\n*.test\n",
            }[lang],
        )
        nouns = rng.sample(NOUNS, rng.randint(3, 5))
        if lang == "python":
            t.file(
                p,
                "pyproject.toml",
                _lines(
                    "[project]",
                    f'name = "{proj}"',
                    f'version = "0.{rng.randint(1, 9)}.0"',
                    'requires-python = ">=3.10"',
                    f'dependencies = ["requests>=2.31", "{rng.choice(["click", "rich", "pydantic"])}"]',
                ),
            )
            src = t.dir(t.dir(p, "src"), pkg)
            t.file(src, "__init__.py", "")
            for noun in nouns:
                t.file(src, f"{noun}s.py", _python_module(rng, pkg, noun))
            tests = t.dir(p, "tests")
            for noun in nouns[:2]:
                t.file(tests, f"test_{noun}s.py", _python_test(rng, pkg, f"{noun}s", noun))
        elif lang == "javascript":
            t.file(
                p,
                "package.json",
                _lines(
                    "{",
                    f'  "name": "{proj}",',
                    f'  "version": "1.{rng.randint(0, 9)}.0",',
                    '  "main": "src/index.js",',
                    '  "scripts": { "start": "node src/index.js", "test": "jest" }',
                    "}",
                ),
            )
            src = t.dir(p, "src")
            t.file(
                src,
                "index.js",
                _lines(
                    "'use strict';",
                    "",
                    *(f"const {n} = require('./{n}');" for n in nouns),
                    "console.log('starting');",
                ),
            )
            for noun in nouns:
                t.file(src, f"{noun}.js", _js_module(rng, noun))
            tests = t.dir(p, "test")
            t.file(
                tests,
                f"{nouns[0]}.test.js",
                _lines(
                    f"const m = require('../src/{nouns[0]}');",
                    "",
                    "test('exports a function', () => {",
                    "  expect(typeof Object.values(m)[0]).toBe('function');",
                    "});",
                ),
            )
        else:
            t.file(p, "go.mod", _lines(f"module github.com/{user}/{proj}", "", "go 1.22"))
            t.file(
                p,
                "main.go",
                _lines(
                    "package main",
                    "",
                    'import "fmt"',
                    "",
                    "func main() {",
                    f'\tfmt.Println("{proj}")',
                    "}",
                ),
            )
            src = t.dir(p, pkg)
            for noun in nouns:
                t.file(src, f"{noun}.go", _go_module(rng, pkg, noun))
        git = t.dir(p, ".git")
        t.file(git, "HEAD", "ref: refs/heads/main\n")
        t.file(
            git,
            "config",
            _lines(
                "[core]",
                "\trepositoryformatversion = 0",
                '[remote "origin"]',
                f"\turl = git@github.com:{user}/{proj}.git",
                '[branch "main"]',
                "\tremote = origin",
            ),
        )
        docs_dir = t.dir(p, "docs")
        t.file(docs_dir, "usage.md", _lines(f"# Using {proj}", "", fake.paragraph(nb_sentences=4)))
        logs = t.dir(p, "logs")
        t.file(logs, "app.log", _log(ctx, proj, rng.randint(30, 80)), max_days=3)
        t.file(logs, "error.log", _log(ctx, proj, rng.randint(3, 12), errors_only=True), max_days=3)
        if rng.random() < 0.5:
            t.file(logs, "debug.log", "")

    # --- Pictures
    pics = t.dir(home, "Pictures")
    photo_no = rng.randint(1000, 3000)
    photos: list[Node] = []
    for y in (now.year - 3, now.year - 2, now.year - 1):
        year_dir = t.dir(pics, str(y))
        events = [
            *rng.sample(TRIP_PLACES, min(1 + ctx.size, len(TRIP_PLACES))),
            rng.choice(FAMILY_EVENTS),
        ]
        for ev in events:
            ev_dir = t.dir(year_dir, ev)
            start = dt.datetime(y, rng.randint(1, 12), rng.randint(1, 28), rng.randint(8, 18))
            for _ in range(rng.randint(5, 10) * ctx.size):
                start += dt.timedelta(minutes=rng.randint(2, 300))
                photo_no += rng.randint(1, 7)
                photos.append(t.file(ev_dir, f"IMG_{photo_no:04d}.jpg", _photo(rng, start, ev)))
    shots = t.dir(pics, "Screenshots")
    for _ in range(rng.randint(3, 5)):
        when = now - dt.timedelta(days=rng.randint(1, 90), minutes=rng.randint(0, 1440))
        t.file(
            shots,
            f"Screenshot {when:%Y-%m-%d at %H.%M.%S}.png",
            _lines(
                "PNG image data, 2560 x 1600, 8-bit/color RGBA",
                f"Captured: {when:%Y-%m-%d %H:%M:%S}",
            ),
        )
    archive = t.dir(pics, "Archive")
    for _ in range(rng.randint(3, 6)):
        photo_no += 1
        old = dt.datetime(now.year - rng.randint(6, 12), rng.randint(1, 12), rng.randint(1, 28), 12)
        t.file(
            archive, f"DSC{photo_no:05d}.jpg", _photo(rng, old, rng.choice(TRIP_PLACES)), mode=0o444
        )
    archive.mode = 0o555

    # --- Downloads (with duplicates of real files)
    downloads = t.dir(home, "Downloads")
    for _ in range(rng.randint(2, 4)):
        inv = rng.randint(10000, 99999)
        t.file(
            downloads,
            f"invoice-{inv}.pdf",
            _lines(
                "PDF document, version 1.7",
                f"Title: Invoice {inv}",
                f"From: {fake.company()}",
                f"Amount due: ${rng.randint(20, 2000)}.{rng.randint(0, 99):02d}",
                "Pages: 1",
            ),
            max_days=60,
        )
    t.file(
        downloads,
        f"{rng.choice(['vscode', 'zoom', 'slack', 'docker-desktop'])}_amd64.deb",
        _lines(
            "Debian binary package (format 2.0)",
            f"Version: {rng.randint(1, 4)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}",
        ),
    )
    t.file(
        downloads,
        "boarding-pass.pdf",
        _lines(
            "PDF document, version 1.4",
            f"Passenger: {full_name.upper()}",
            f"Flight: {fake.bothify('??###').upper()}",
            f"Seat: {rng.randint(1, 40)}{rng.choice('ABCDEF')}",
        ),
    )
    for src in rng.sample(
        [n for n in t.nodes if n.kind == "file" and n.parent_id in (work.id, recipes.id)], 2
    ):
        stem, _, ext = src.name.rpartition(".")
        t.file(downloads, f"{stem} (1).{ext}", src.content, max_days=30)
    dup = rng.choice(photos)
    t.file(downloads, dup.name, dup.content, max_days=30)

    videos = t.dir(home, "Videos")
    for _ in range(rng.randint(2, 4) * ctx.size):
        place = rng.choice(TRIP_PLACES)
        when = now - dt.timedelta(days=rng.randint(30, 700))
        t.file(
            videos,
            f"{place.lower().replace(' ', '-')}-{when:%Y%m%d}.mp4",
            _lines(
                "ISO Media, MP4 v2",
                f"Duration: {rng.randint(0, 9)}:{rng.randint(0, 59):02d}",
                f"Resolution: {rng.choice(['1920x1080', '3840x2160'])}",
                f"Recorded: {when:%Y-%m-%d}",
            ),
        )

    # --- Music and Desktop
    music = t.dir(home, "Music")
    playlists = t.dir(music, "playlists")
    for name in rng.sample(["road-trip", "focus", "workout", "sunday-morning", "jazz-evenings"], 3):
        t.file(
            playlists,
            f"{name}.m3u",
            "#EXTM3U\n" + "".join(f"{s}.mp3\n" for s in rng.sample(SONGS, rng.randint(4, 8))),
        )
    desktop = t.dir(home, "Desktop")
    t.file(
        desktop,
        "shopping-list.txt",
        "".join(
            f"{x}\n"
            for x in rng.sample(
                [
                    "milk",
                    "eggs",
                    "bread",
                    "coffee",
                    "apples",
                    "rice",
                    "pasta",
                    "cheese",
                    "tomatoes",
                    "olive oil",
                ],
                6,
            )
        ),
    )
    t.file(desktop, "ideas.md", _lines("# Ideas", *(f"- {fake.catch_phrase()}" for _ in range(5))))

    shell = Shell(
        id=1, user=user, hostname=hostname, home_id=home.id, cwd_id=home.id, oldpwd_id=None
    )
    ctx.insert([*t.nodes, shell])  # as add_all and a flush write them, off the unit of work
    _ = DirStackEntry  # the directory stack starts empty
