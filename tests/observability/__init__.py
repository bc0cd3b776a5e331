"""What the library reports about itself: metrics, lifecycle events, OpenTelemetry."""
