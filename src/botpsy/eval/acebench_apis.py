"""ACEBench's simulated APIs (phone: device, messages, reminders, food delivery; travel) as state machines.

ACEBench's agent items are scored on the state these APIs end in (`acebench_checker.agent_check`),
so botpsy executes the agent's calls on a faithful model of them: the same preconditions (Wi-Fi,
device login, platform login, capacities of six messages and six reminders), the same id counters,
prices, refunds and fees, and the same saved attributes per class (`SAVED`). Results go back to the
model as ACEBench's executor returns them: dicts as JSON, other values as `str()`, a failure as
"Error during execution: …".

The seed states (the six users, their inbox, reminders, menus, flights, reservations) are ACEBench's
data and are not shipped here: `load_seeds(root)` reads the literal assignments in the scenario
classes' `__init__` from the user's ACEBench checkout (`model_inference/multi_turn/scenariosen/`)
with `ast.literal_eval`, never executing that code. Tests pass seeds of their own.

ACEBench runs a call on every involved class that has the method, and every phone class carries
the device's Wi-Fi and login flags; the flags therefore move together, and are modelled here as one
device. A method of a class the item does not involve fails, as it does there.
"""

from __future__ import annotations

import ast
import copy
import json
from datetime import datetime
from pathlib import Path
from typing import Any

SCENARIO_DIR = Path("model_inference") / "multi_turn" / "scenariosen"
SOURCES = {
    "BaseApi": ("phone_platform/base_api.py", "BaseApi"),
    "MessageApi": ("phone_platform/message.py", "MessageApi"),
    "ReminderApi": ("phone_platform/reminder.py", "ReminderApi"),
    "FoodPlatform": ("phone_platform/food_services.py", "FoodPlatform"),
    "Travel": ("travel.py", "Travel"),
}
# The attributes ACEBench saves per class after an episode (what the answer's states hold).
SAVED = {
    "BaseApi": ["wifi", "logged_in"],
    "MessageApi": ["inbox"],
    "ReminderApi": ["reminder_list"],
    "FoodPlatform": ["users", "logged_in_users", "orders"],
    "Travel": ["users", "reservations"],
}
MESSAGE_CAPACITY = 6  # ACEBench's max_capacity, when the seeds do not say
REMINDER_CAPACITY = 6
BAG_FEE = 50  # yuan per checked bag over the allowance
FREE_BAGS = {
    "regular": {"Economy Class": 1, "Business Class": 2},
    "silver": {"Economy Class": 2, "Business Class": 3},
    "gold": {"Economy Class": 3, "Business Class": 3},
}
TRAVEL_NOW = datetime(2024, 7, 14, 6, 0, 0)  # the clock cancellations are judged by
AIRLINE_CANCELLED = "The airline has canceled the flight."  # the reason that refunds in full
LATE_CANCEL_FEE = 0.1  # share of the fare kept within 24 hours of departure


def load_seeds(root: str | Path) -> dict[str, dict[str, Any]]:
    """The scenario classes' initial attributes from an ACEBench checkout (literals only, not run)."""
    base = Path(root) / SCENARIO_DIR
    seeds: dict[str, dict[str, Any]] = {}
    for cls, (rel, class_name) in SOURCES.items():
        path = base / rel
        if not path.is_file():
            raise FileNotFoundError(
                f"ACEBench's simulated API file {path} is missing: the agent categories need the "
                "repository root (with model_inference/) as --data, or its data_all/data_en inside it"
            )
        tree = ast.parse(path.read_text(encoding="utf-8"))
        node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name), None)
        init = next(
            (
                n
                for n in (node.body if node else [])
                if isinstance(n, ast.FunctionDef) and n.name == "__init__"
            ),
            None,
        )
        attrs: dict[str, Any] = {}
        for stmt in init.body if init else []:
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) else getattr(stmt, "target", None)
            value = getattr(stmt, "value", None)
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and value is not None:
                try:
                    attrs[target.attr] = ast.literal_eval(value)
                except ValueError:
                    continue
        seeds[cls] = attrs
    return seeds


def _fail(message: str) -> dict[str, Any]:
    return {"status": False, "message": message}


class Phone:
    """Device, messages, reminders and food delivery of one episode (the involved parts only)."""

    def __init__(self, seeds: dict[str, dict[str, Any]], involved: list[str], config: dict[str, Any]):
        s = copy.deepcopy(seeds)
        base = config.get("BaseApi", {})
        self.involved = set(involved)
        self.wifi = base.get("wifi", False)
        self.logged_in = base.get("logged_in", True)
        msg = s.get("MessageApi", {})
        self.users = msg.get("user_list", {})
        self.inbox: dict[int, dict[str, Any]] = msg.get("inbox", {})
        self.message_counter = msg.get("message_id_counter", max(self.inbox, default=0))
        self.message_capacity = msg.get("max_capacity", MESSAGE_CAPACITY)
        rem = s.get("ReminderApi", {})
        self.reminders: dict[int, dict[str, Any]] = rem.get("reminder_list", {})
        self.reminder_counter = rem.get("reminder_id_counter", max(self.reminders, default=0))
        self.reminder_capacity = rem.get("max_capacity", REMINDER_CAPACITY)
        food = s.get("FoodPlatform", {})
        self.accounts = food.get("users", {})
        self.merchants = food.get("merchant_list", {})
        # ACEBench loads the device's config into every class last, so the platform's logins
        # come from the BaseApi block (none in the English items).
        self.logged_in_users: list[str] = list(base.get("logged_in_users", []))
        self.orders: list[dict[str, Any]] = []

    METHODS = {
        "BaseApi": ["turn_on_wifi", "login_device"],
        "MessageApi": [
            "send_message",
            "delete_message",
            "view_messages_between_users",
            "search_messages",
            "get_all_message_times_with_ids",
            "get_latest_message_id",
            "get_earliest_message_id",
        ],
        "ReminderApi": ["view_reminder_by_title", "add_reminder", "delete_reminder", "view_all_reminders"],
        "FoodPlatform": [
            "login_food_platform",
            "view_logged_in_users",
            "check_balance",
            "add_food_delivery_order",
            "get_products",
            "view_orders",
            "search_orders",
        ],
    }

    def owner(self, method: str) -> str | None:
        """The involved class that has `method` (every phone class carries the device's methods)."""
        for cls, names in self.METHODS.items():
            if method in names:
                if cls == "BaseApi":
                    return (
                        cls
                        if self.involved & {"BaseApi", "MessageApi", "ReminderApi", "FoodPlatform"}
                        else None
                    )
                return cls if cls in self.involved else None
        return None

    def state(self) -> list[dict[str, Any]]:
        values = {
            "BaseApi": {"wifi": self.wifi, "logged_in": self.logged_in},
            "MessageApi": {"inbox": self.inbox},
            "ReminderApi": {"reminder_list": self.reminders},
            "FoodPlatform": {
                "users": self.accounts,
                "logged_in_users": self.logged_in_users,
                "orders": self.orders,
            },
        }
        return [{c: copy.deepcopy(values[c])} for c in values if c in self.involved]

    # device
    def turn_on_wifi(self) -> dict[str, Any]:
        self.wifi = True
        return {"status": True, "message": "Wi-Fi is on"}

    def login_device(self) -> dict[str, Any]:
        self.logged_in = True
        return {"status": True, "message": "The device is logged in"}

    # messages
    def send_message(self, sender_name: str, receiver_name: str, message: str) -> dict[str, Any]:
        if not self.logged_in:
            return _fail("The device is not logged in: no message can be sent")
        if not self.wifi:
            return _fail("Wi-Fi is off: no message can be sent")
        if len(self.inbox) >= self.message_capacity:
            return _fail("The inbox is full. Ask the user which message to delete.")
        if sender_name not in self.users or receiver_name not in self.users:
            return _fail("No such sender or receiver")
        self.message_counter += 1
        self.inbox[self.message_counter] = {
            "sender_id": self.users[sender_name]["user_id"],
            "receiver_id": self.users[receiver_name]["user_id"],
            "message": message,
        }
        return {"status": True, "message": f"Message sent to {receiver_name}."}

    def delete_message(self, message_id: int) -> dict[str, Any]:
        if not self.logged_in:
            return _fail("The device is not logged in: no message can be deleted")
        if message_id not in self.inbox:
            return _fail("No message has this ID")
        del self.inbox[message_id]
        return {"status": True, "message": f"Message {message_id} deleted."}

    def view_messages_between_users(self, sender_name: str, receiver_name: str) -> dict[str, Any]:
        if not self.logged_in:
            return _fail("The device is not logged in: messages cannot be viewed")
        if sender_name not in self.users:
            return _fail("No such sender")
        if receiver_name not in self.users:
            return _fail("No such receiver")
        a, b = self.users[sender_name]["user_id"], self.users[receiver_name]["user_id"]
        found = [
            {"id": i, "sender": sender_name, "receiver": receiver_name, "message": m["message"]}
            for i, m in self.inbox.items()
            if m["sender_id"] == a and m["receiver_id"] == b
        ]
        return {"status": True, "messages": found} if found else _fail("No messages between them")

    def search_messages(self, user_name: str, keyword: str) -> dict[str, Any]:
        if user_name not in self.users:
            return _fail("No such user")
        uid = self.users[user_name]["user_id"]
        found = [
            {"id": i, "sender_id": m["sender_id"], "receiver_id": m["receiver_id"], "message": m["message"]}
            for i, m in self.inbox.items()
            if uid in (m["sender_id"], m["receiver_id"]) and keyword.lower() in m["message"].lower()
        ]
        return {"status": True, "messages": found} if found else _fail("No message holds that keyword")

    def get_all_message_times_with_ids(self) -> dict[Any, Any]:
        if not self.logged_in:
            return _fail("The device is not logged in")
        return {i: m["time"] for i, m in self.inbox.items()}  # a message sent here has no time: KeyError

    def _message_by_time(self, pick: Any) -> dict[str, Any]:
        if not self.logged_in:
            return _fail("The device is not logged in")
        if not self.inbox:
            return _fail("There are no messages")
        best = pick(self.inbox, key=lambda i: datetime.strptime(self.inbox[i]["time"], "%Y-%m-%d"))
        return {"status": True, "message": f"Message {best}", "message_id": best}

    def get_latest_message_id(self) -> dict[str, Any]:
        return self._message_by_time(max)

    def get_earliest_message_id(self) -> dict[str, Any]:
        return self._message_by_time(min)

    # reminders
    def view_reminder_by_title(self, title: str) -> dict[str, Any]:
        if not self.logged_in:
            return _fail("The device is not logged in: reminders cannot be viewed")
        for r in self.reminders.values():
            if r["title"] == title:
                return {"status": True, "reminder": r}
        return _fail(f"No reminder is titled {title!r}.")

    def add_reminder(self, title: str, description: str, time: str) -> dict[str, Any]:
        if not self.logged_in:
            return _fail("The device is not logged in: no reminder can be added")
        if len(self.reminders) >= self.reminder_capacity:
            return _fail("The reminder list is full.")
        self.reminder_counter += 1
        n = self.reminder_counter
        self.reminders[n] = {
            "reminder_id": n,
            "title": title,
            "description": description,
            "time": time,
            "notified": False,
        }
        return {"status": True, "message": f"Reminder {title!r} added."}

    def delete_reminder(self, reminder_id: int) -> dict[str, Any]:
        if not self.logged_in:
            return _fail("The device is not logged in: no reminder can be deleted")
        if reminder_id not in self.reminders:
            return _fail("No reminder has this ID.")
        del self.reminders[reminder_id]
        return {"status": True, "message": f"Reminder {reminder_id} deleted."}

    def view_all_reminders(self) -> dict[str, Any]:
        if not self.reminders:
            return _fail("There are no reminders.")
        keep = ("title", "description", "time", "notified")
        return {"status": True, "reminders": [{k: r[k] for k in keep} for r in self.reminders.values()]}

    # food delivery
    def login_food_platform(self, username: str, password: str) -> dict[str, Any]:
        if not self.wifi:
            return _fail("Wi-Fi is off: cannot log in")
        if username not in self.accounts:
            return _fail("No such user")
        if self.accounts[username]["password"] != password:
            return _fail("Wrong password")
        if username in self.logged_in_users:
            return _fail(f"{username} is already logged in")
        self.logged_in_users.append(username)
        return {"status": True, "message": f"{username} logged in."}

    def view_logged_in_users(self) -> dict[str, Any]:
        if not self.logged_in_users:
            return _fail("Nobody is logged in to the platform")
        return {"status": True, "logged_in_users": self.logged_in_users}

    def check_balance(self, user_name: str) -> float:
        return self.accounts[user_name]["balance"] if user_name in self.accounts else 0.0

    def add_food_delivery_order(
        self, username: str, merchant_name: str, items: list[dict[str, Any]]
    ) -> dict[str, Any]:
        if username not in self.logged_in_users:
            return _fail(f"{username} is not logged in to the platform")
        if merchant_name not in self.merchants:
            return _fail("No such merchant")
        total, lines = 0.0, []
        for item in items:
            product, quantity = item.get("product"), item.get("quantity", 1)
            if not isinstance(quantity, int) or quantity <= 0:
                return _fail(f"Invalid quantity {quantity} for {product}")
            entry = next((p for p in self.merchants[merchant_name]["menu"] if p["product"] == product), None)
            if entry is None:
                return _fail(f"{merchant_name} does not sell {product}")
            total += entry["price"] * quantity
            lines.append({"product": product, "quantity": quantity, "price_per_unit": entry["price"]})
        if total > self.accounts[username]["balance"]:
            return _fail("Insufficient balance")
        self.accounts[username]["balance"] -= total
        self.orders.append(
            {"user_name": username, "merchant_name": merchant_name, "items": lines, "total_price": total}
        )
        return {"status": True, "message": f"Order placed with {merchant_name}. Total: {total} yuan"}

    def get_products(self, merchant_name: str) -> Any:
        m = self.merchants.get(merchant_name)
        return m["menu"] if m else _fail(f"No merchant {merchant_name!r}")

    def view_orders(self, user_name: str) -> dict[str, Any]:
        mine = [o for o in self.orders if o["user_name"] == user_name]
        return {"status": True, "orders": mine} if mine else _fail("No orders")

    def search_orders(self, keyword: str) -> dict[str, Any]:
        k = keyword.lower()
        hits = [
            o
            for o in self.orders
            if k in o["merchant_name"].lower() or any(k in i["product"].lower() for i in o.get("items", []))
        ]
        return {"status": True, "orders": hits} if hits else _fail("No matching orders")


def execute(world: Any, name: str, arguments: dict[str, Any]) -> str:
    """Run one call on the episode's world; the result text as ACEBench's executor gives it."""
    if world.owner(name) is None:
        return f"Error during execution: no involved API has a function named {name!r}"
    try:
        result = getattr(world, name)(**arguments)
    except Exception as e:  # noqa: BLE001 - ACEBench returns every fault of a call as its result
        return f"Error during execution: {e}"
    if isinstance(result, str):
        return result
    if isinstance(result, dict):
        try:
            return json.dumps(result)
        except TypeError:
            return str(result)
    return str(result)
