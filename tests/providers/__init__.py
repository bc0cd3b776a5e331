"""The provider layer: each wire API's converter and HTTP adapter."""
