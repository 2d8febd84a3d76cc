"""What is installed: every package folder under the import name pyproject.toml gives it, so a new
subpackage cannot be left out of the wheel (an editable install would still find it and hide that)."""
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAMES = {"eqsat": "eqsat", "rules": "eqsat_rules", "fx_bridge": "eqsat_torch"}  # folder -> import name


def test_every_package_folder_is_installed_under_its_import_name():
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {".".join([NAMES[init.relative_to(ROOT).parts[0]], *init.relative_to(ROOT).parts[1:-1]])
               for top in NAMES for init in (ROOT / top).rglob("__init__.py")}
    assert set(setup["packages"]) == folders
    assert {name: folder for name, folder in setup["package-dir"].items()} == {
        name: folder for folder, name in NAMES.items() if folder != name}
