"""The inner life (cognitive-plan §4): feedback, readiness, reflection, promotion, wandering, in one home."""
