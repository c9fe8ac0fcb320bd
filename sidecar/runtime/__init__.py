"""The process: command line and configuration, the server loop and its lifecycle (ready, signals,
parent watch, maintenance), the dispatcher that routes requests to the domain services, and the
helpers of the frozen binary and native memory. The only package that wires the others together."""
