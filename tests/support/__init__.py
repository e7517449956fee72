"""What the tests share: helpers, fixtures, fakes and stand-ins (the DFS emulator)."""
