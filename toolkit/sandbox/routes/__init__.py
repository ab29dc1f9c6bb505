"""One router per resource: payments, products, subscriptions, and the sandbox-only controls."""
