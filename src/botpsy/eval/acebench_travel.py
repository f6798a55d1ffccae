"""ACEBench's travel API (flights, users, reservations) as a state machine, for its agent items.

Same rules as ACEBench's `Travel` scenario, restated: prices per cabin, free bags by membership and
cabin (`acebench_apis.FREE_BAGS`, 50 yuan per extra bag), payments from cash or bank, cabin changes
paid or refunded by the fare difference of the reservation's original flight, cancellations judged
at a fixed clock (full refund when the airline cancelled or more than a day ahead, else 10% kept,
refunds to cash; the reservation itself stays on file, as there). Seeds come from `load_seeds`.
"""

from __future__ import annotations

import copy
from datetime import datetime, timedelta
from typing import Any

from botpsy.eval.acebench_apis import AIRLINE_CANCELLED, BAG_FEE, FREE_BAGS, LATE_CANCEL_FEE, TRAVEL_NOW

WRONG_LOGIN = {"status": "error", "message": "Incorrect username or password."}
METHODS = [
    "get_flight_details",
    "find_transfer_flights",
    "get_user_details",
    "get_reservation_details",
    "reserve_flight",
    "modify_flight",
    "cancel_reservation",
]


class Travel:
    def __init__(self, seeds: dict[str, dict[str, Any]], involved: list[str], config: dict[str, Any]):
        s = copy.deepcopy(seeds.get("Travel", {}))
        self.involved = set(involved)
        self.users: dict[str, dict[str, Any]] = s.get("users", {})
        self.flights: list[dict[str, Any]] = s.get("flights", [])
        self.reservations: list[dict[str, Any]] = s.get("reservations", [])

    def owner(self, method: str) -> str | None:
        return "Travel" if method in METHODS and "Travel" in self.involved else None

    def state(self) -> list[dict[str, Any]]:
        return [{"Travel": copy.deepcopy({"users": self.users, "reservations": self.reservations})}]

    def get_flight_details(self, origin: str | None = None, destination: str | None = None) -> Any:
        found = [
            f
            for f in self.flights
            if (not origin or f["origin"] == origin) and (not destination or f["destination"] == destination)
        ]
        if not found:
            return "No direct flight matches."
        return [dict(f) for f in found]

    def find_transfer_flights(self, origin_city: str, transfer_city: str, destination_city: str) -> Any:
        """Pairs of available legs through `transfer_city` where the first lands before the second leaves."""

        def when(f: dict[str, Any], key: str) -> datetime:
            return datetime.strptime(f[key], "%Y-%m-%d %H:%M:%S")

        def legs(a: str, b: str) -> list[dict[str, Any]]:
            return [
                f
                for f in self.flights
                if f["origin"] == a and f["destination"] == b and f["status"] == "available"
            ]

        pairs = [
            {"first_leg": one, "second_leg": two}
            for one in legs(origin_city, transfer_city)
            for two in legs(transfer_city, destination_city)
            if when(one, "arrival_time") < when(two, "depart_time")
        ]
        return pairs or "No connecting flights match."

    def get_user_details(self, user_id: str, password: str) -> dict[str, Any]:
        user = self.users.get(user_id)
        if user and user["password"] == password:
            return {k: v for k, v in user.items() if k != "password"}
        return dict(WRONG_LOGIN)

    def get_reservation_details(self, reservation_id: str | None = None, user_id: str | None = None) -> Any:
        if reservation_id:
            rs = [r for r in self.reservations if r["reservation_id"] == reservation_id]
        elif user_id:
            rs = [r for r in self.reservations if r["user_id"] == user_id]
        else:
            return {"status": "error", "message": "Give a reservation ID or a user ID"}
        flight = lambda no: next((f for f in self.flights if f["flight_no"] == no), None)  # noqa: E731
        return [{**r, "flight_info": flight(r["flight_no"])} for r in rs]

    def _pay(self, user: dict[str, Any], method: str, amount: float) -> bool:
        key = {"cash": "cash_balance", "bank": "bank_balance"}.get(method)
        if key is None:
            return True  # an unknown method moves no money, as in ACEBench
        if user[key] + amount < 0:
            return False
        user[key] += amount
        return True

    def reserve_flight(
        self, user_id: str, password: str, flight_no: str, cabin: str, payment_method: str, baggage_count: int
    ) -> str:
        user = self.users.get(user_id)
        user = user if user and user["password"] == password else dict(WRONG_LOGIN)
        flight = next(
            (f for f in self.flights if f["flight_no"] == flight_no and f["status"] == "available"), None
        )
        if flight is None:
            raise LookupError(f"no available flight {flight_no}")
        cost = flight["economy_price"] if cabin == "Economy Class" else flight["business_price"]
        # A failed login or an unknown cabin has no allowance: the lookup fails, as there.
        cost += max(baggage_count - FREE_BAGS[user["membership_level"]][cabin], 0) * BAG_FEE
        if payment_method not in ("cash", "bank"):
            return "Invalid payment method"
        key = f"{payment_method}_balance"
        if cost > self.users[user_id][key]:
            return f"Your {payment_method} balance is insufficient. Please use another payment method."
        self.users[user_id][key] -= cost
        flight["seats_available"] -= 1
        rid = f"res_{len(self.reservations) + 1}"
        self.reservations.append(
            {
                "reservation_id": rid,
                "user_id": user_id,
                "flight_no": flight_no,
                "payment_method": payment_method,
                "cabin": cabin,
                "baggage": baggage_count,
            }
        )
        return f"Booked. Reservation ID: {rid}. Total cost: {cost} yuan (bags included)."

    def modify_flight(
        self,
        user_id: str,
        reservation_id: str,
        new_flight_no: str | None = None,
        new_cabin: str | None = None,
        add_baggage: int = 0,
        new_payment_method: str | None = None,
    ) -> str:
        r = next(
            (
                r
                for r in self.reservations
                if r["reservation_id"] == reservation_id and r["user_id"] == user_id
            ),
            None,
        )
        if r is None:
            return "No such reservation for this user."
        current = next((f for f in self.flights if f["flight_no"] == r["flight_no"]), None)
        if current is None:
            return "Flight information not found."
        method = new_payment_method or r["payment_method"]
        user = self.users[user_id]
        notes = []
        if new_flight_no and new_flight_no != r["flight_no"]:
            new = next((f for f in self.flights if f["flight_no"] == new_flight_no), None)
            if not (
                new and new["origin"] == current["origin"] and new["destination"] == current["destination"]
            ):
                return "Flight change failed: unknown flight, or another route."
            r["flight_no"] = new_flight_no
            notes.append("Flight changed.")
        if new_cabin and new_cabin != r.get("cabin"):
            prices = {"Economy Class": current["economy_price"], "Business Class": current["business_price"]}
            diff = prices.get(new_cabin, 0) - prices.get(r["cabin"], 0)
            r["cabin"] = new_cabin
            if diff > 0:
                paid = self._pay(user, method, -diff)
                notes.append(
                    f"Cabin changed; paid {diff}." if paid else "Balance too low for the cabin difference."
                )
            elif diff < 0:
                self._pay(user, method, -diff)
                notes.append(f"Cabin changed; refunded {-diff}.")
        if add_baggage > 0:
            total = r.get("baggage", 0) + add_baggage
            fee = max(0, total - FREE_BAGS.get(user["membership_level"], {}).get(r["cabin"], 0)) * BAG_FEE
            if fee > 0:
                paid = self._pay(user, method, -fee)
                notes.append(f"Bags added; fee {fee}." if paid else "Balance too low for the bag fee.")
            r["baggage"] = total
        return " ".join(notes) or "Modified, no fee."

    def cancel_reservation(self, user_id: str, reservation_id: str, reason: str) -> str:
        user = self.users.get(user_id)
        if not user:
            return "Invalid user ID."
        r = next(
            (
                r
                for r in self.reservations
                if r["reservation_id"] == reservation_id and r["user_id"] == user_id
            ),
            None,
        )
        if r is None:
            return "Invalid reservation ID, or not this user's."
        flight = next((f for f in self.flights if f["flight_no"] == r["flight_no"]), None)
        if flight is None:
            return "Invalid flight information."
        depart = datetime.strptime(flight["depart_time"], "%Y-%m-%d %H:%M:%S")
        if TRAVEL_NOW > depart:
            return "This flight has been flown and cannot be cancelled."
        fare = flight["economy_price"] if r["cabin"] == "Economy Class" else flight["business_price"]
        if reason == AIRLINE_CANCELLED or depart - TRAVEL_NOW > _ONE_DAY:
            user["cash_balance"] += fare
            return f"Cancelled free of charge; {fare} yuan refunded."
        fee = fare * LATE_CANCEL_FEE
        user["cash_balance"] += fare - fee
        return f"Cancelled within 24 hours: {fee} yuan kept, {fare - fee} yuan refunded."


_ONE_DAY = timedelta(days=1)
