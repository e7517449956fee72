"""A test credential for the SDK clients."""

import time

from azure.core.credentials import AccessToken

STORAGE_SCOPE = "https://storage.azure.com/.default"


class FixedTokenCredential:
    """A TokenCredential that hands out one fixed token and records the scopes asked for."""

    def __init__(self, token: str = "test-token"):
        self.token = token
        self.scopes: list[str] = []

    def get_token(self, *scopes, **kwargs) -> AccessToken:
        self.scopes.extend(scopes)
        return AccessToken(self.token, int(time.time()) + 3600)
