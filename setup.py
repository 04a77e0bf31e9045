"""Maps the built-in server folders under plugins/ to the importable package prove_plugins."""

from setuptools import find_packages, setup

plugin_packages = ["prove_plugins"] + [f"prove_plugins.{p}" for p in find_packages("plugins")]
setup(
    packages=find_packages(include=["prove_gym", "prove_gym.*"]) + plugin_packages,
    package_dir={"prove_plugins": "plugins"},
)
