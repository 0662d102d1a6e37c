"""The validating admission webhook: the fail-closed trust boundary for gang Jobs.

``review`` holds the pure AdmissionReview logic, ``app`` the FastAPI wiring,
``tls`` the hot-reloading certificate, ``main`` the process entry point.
"""
