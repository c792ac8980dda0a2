"""The test suite, a package: helpers are imported by their full name (``tests.polling``)."""
