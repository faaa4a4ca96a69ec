"""Stand-in for the get-pip script ansible-test downloads from ci-files.testing.ansible.com.

``ansible-test sanity`` creates one virtual environment per test and bootstraps pip into it
with a get-pip script fetched from Ansible's CI file server, which this machine cannot reach.
ansible-test reads the script from ``~/.ansible/test/cache/get_pip_<version>.py`` when it is
there (ansible_test/_util/target/setup/requirements.py, ``bootstrap``), and runs it with the
arguments it would give ``pip install``. This stand-in does the same with the standard
library's ensurepip and then pip itself, from the package index: scripts/collection.sh copies
it into that cache before running the sanity tests.
"""

from __future__ import annotations

import subprocess
import sys

# get-pip's own switches (do not add setuptools or wheel); pip install has no such options.
GET_PIP_ONLY = frozenset({"--no-setuptools", "--no-wheel"})


def main() -> int:
    subprocess.run([sys.executable, "-m", "ensurepip", "--default-pip"], check=True)
    args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY]
    return subprocess.run([sys.executable, "-m", "pip", "install", *args], check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
