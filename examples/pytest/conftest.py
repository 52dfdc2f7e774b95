"""conftest.py: lets the tests import staging.py from this directory whatever pytest's rootdir."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
