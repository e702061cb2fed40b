"""The built-in dashboard: static pages and their JSON endpoints on the API listener."""
