"""Verifies webhook deliveries with PyPI's `standardwebhooks` library, as a receiver would.

Reads a JSON array on stdin, each {"secret": "whsec_…", "headers": {...}, "body": "<text>"},
and prints one JSON line per delivery: {"ok": the parsed body} or {"error": "<message>"}.
"""

import json
import sys

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def main():
    for delivery in json.load(sys.stdin):
        try:
            payload = Webhook(delivery["secret"]).verify(delivery["body"], delivery["headers"])
            print(json.dumps({"ok": payload}, sort_keys=True))
        except WebhookVerificationError as error:
            print(json.dumps({"error": str(error)}))


if __name__ == "__main__":
    main()
