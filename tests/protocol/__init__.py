"""The machine and the contract: chunk shapes, rules, error codes and their precedence, policies."""
