"""The search app's routes, one module per part of the site; ``create_app`` includes them."""
