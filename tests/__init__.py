"""The test suite, a package: unit/, integration/ and e2e/ mirror the code they test.

Helpers are imported by their full name (``from tests.polling import wait_for``). A helper
module sits in the folder nearest to all of its users, as a fixture sits in the nearest
conftest.py: polling, faultproxy, fake_weather and networkx_reference here serve more than
one of unit/, integration/ and e2e/; the others live with the tests that use them.
"""
