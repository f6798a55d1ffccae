"""Customer support for a mobile operator, with a written policy and a user who acts on their phone.

The assistant is the operator's agent: it sees the customer's line, bills and plans, and can change
them (`TOOLS`). It cannot touch the customer's phone; the *customer* can (`USER_TOOLS`: airplane
mode, mobile data, data roaming, SIM), so fixing "my data doesn't work" means finding what is wrong
on both sides and talking the customer through their part. Whether data works is derived from
both sides (`TelecomState.diagnose`), never stored, so it cannot drift from the settings.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from botpsy.tools.base import ToolError, suite, tool
from botpsy.tools.common import by_id, phone_arg, text_arg

POLICY = """Policy of Telly Mobile support (you are its agent):
1. Identify the line with find_line using the customer's phone number before anything else.
2. You cannot change the customer's phone. Ask them to do phone steps one at a time and to tell you what they see.
3. For "no data" or "no service": check the line first (suspended, roaming off while abroad, data used up), fix what you can, then guide the customer through the phone: airplane mode off, SIM seated, mobile data on, data roaming on when abroad.
4. Enabling roaming is free. A suspended line can be resumed only when no bill is overdue; a bill is paid with take_payment only after the customer agrees.
5. Data packs and plan changes cost money: say the price and wait for an explicit yes before doing them.
6. Hand off to a technician only when every step above has been done and data still does not work.
7. Do not promise credits or discounts that no tool grants."""

DATA_PACKS = {1: 500, 3: 1200, 5: 1800}  # GB -> price in cents


def fmt(cents: int) -> str:
    return f"{cents / 100:.2f}"


class Plan(BaseModel):
    id: str
    name: str
    data_gb: int
    price: int  # cents per month


class Line(BaseModel):
    id: str
    number: str
    holder: str
    plan_id: str
    status: Literal["active", "suspended"] = "active"
    roaming: bool = False
    abroad: bool = False
    data_used_gb: float = 0.0
    extra_gb: int = 0


class TelBill(BaseModel):
    id: str
    line_id: str
    amount: int
    due: str
    status: Literal["open", "overdue", "paid"] = "open"
    items: list[str] = Field(default_factory=list)


class Phone(BaseModel):
    airplane_mode: bool = False
    mobile_data: bool = True
    data_roaming: bool = False
    sim_seated: bool = True


class TelecomState(BaseModel):
    plans: list[Plan] = Field(default_factory=list)
    lines: list[Line] = Field(default_factory=list)
    bills: list[TelBill] = Field(default_factory=list)
    phone: Phone = Field(default_factory=Phone)  # the customer's own phone (user side)
    phone_line: str = ""  # which line's SIM is in that phone
    handoffs: list[str] = Field(default_factory=list)

    def line(self, line_id: str) -> Line:
        return by_id(self.lines, line_id, "line", "use find_line with the phone number")

    def plan(self, plan_id: str) -> Plan:
        return by_id(self.plans, plan_id, "plan", "use list_plans")

    def canonical(self) -> dict:
        return self.model_dump(exclude={"handoffs"}) | {"handoffs": len(self.handoffs)}

    def diagnose(self) -> dict:
        """What the customer's phone shows, from both the phone's settings and the line."""
        line = next((ln for ln in self.lines if ln.id == self.phone_line), None)
        p = self.phone
        if p.airplane_mode:
            return {"signal": "none", "status_bar": "airplane mode", "data": False}
        if not p.sim_seated or line is None:
            return {"signal": "none", "status_bar": "no SIM", "data": False}
        if line.status != "active":
            return {"signal": "emergency calls only", "status_bar": "SOS only", "data": False}
        limit = self.plan(line.plan_id).data_gb + line.extra_gb
        reasons = []
        if not p.mobile_data:
            reasons.append("mobile data off")
        if line.abroad and not (p.data_roaming and line.roaming):
            reasons.append("roaming")
        if line.data_used_gb >= limit:
            reasons.append("data allowance used up")
        bar = "5G, roaming" if line.abroad else "5G"
        return {
            "signal": "good",
            "status_bar": bar if not reasons else f"{bar}, no data",
            "data": not reasons,
        }


@tool()
def find_line(state: TelecomState, phone_number: str) -> dict:
    """Look up a line by phone number: plan, status, roaming, data use, bills.

    Args:
        phone_number: the customer's number
    """
    number = phone_arg(phone_number, "phone_number")
    line = next((ln for ln in state.lines if ln.number == number), None)
    if line is None:
        raise ToolError(f"no line with number {number}; ask the customer to check it")
    plan = state.plan(line.plan_id)
    bills = [
        {"id": b.id, "amount": fmt(b.amount), "due": b.due, "status": b.status}
        for b in state.bills
        if b.line_id == line.id and b.status != "paid"
    ]
    return {
        "line_id": line.id,
        "holder": line.holder,
        "status": line.status,
        "plan": plan.name,
        "data_used_gb": line.data_used_gb,
        "data_limit_gb": plan.data_gb + line.extra_gb,
        "roaming_enabled": line.roaming,
        "abroad": line.abroad,
        "unpaid_bills": bills,
    }


@tool()
def list_plans(state: TelecomState) -> dict:
    """List the plans on offer."""
    return {
        "plans": [
            {"id": p.id, "name": p.name, "data_gb": p.data_gb, "price": fmt(p.price)} for p in state.plans
        ]
    }


@tool(mutates=True)
def enable_roaming(state: TelecomState, line_id: str) -> dict:
    """Allow the line to use networks abroad (free).

    Args:
        line_id: id from find_line
    """
    line = state.line(line_id)
    if line.roaming:
        raise ToolError(f"roaming is already enabled on {line.id}")
    line.roaming = True
    return {"line_id": line.id, "roaming_enabled": True}


@tool(mutates=True, sensitive=True)
def add_data_pack(state: TelecomState, line_id: str, gigabytes: Literal[1, 3, 5]) -> dict:
    """Add extra data this month; it is charged on the next bill.

    Args:
        line_id: id from find_line
        gigabytes: 1 (5.00), 3 (12.00) or 5 (18.00)
    """
    line = state.line(line_id)
    if line.status != "active":
        raise ToolError(f"line {line.id} is {line.status}; resume it first")
    line.extra_gb += gigabytes
    price = DATA_PACKS[gigabytes]
    bill = next((b for b in state.bills if b.line_id == line.id and b.status == "open"), None)
    if bill is None:
        bill = TelBill(id=f"B{len(state.bills) + 1:03d}", line_id=line.id, amount=0, due="2026-12-31")
        state.bills.append(bill)
    bill.amount += price
    bill.items.append(f"{gigabytes} GB data pack")
    return {"line_id": line.id, "added_gb": gigabytes, "charged": fmt(price), "bill": bill.id}


@tool(mutates=True, sensitive=True)
def take_payment(state: TelecomState, bill_id: str) -> dict:
    """Take payment for a bill with the card on file.

    Args:
        bill_id: id from find_line
    """
    bill = by_id(state.bills, bill_id, "bill", "see unpaid_bills in find_line")
    if bill.status == "paid":
        raise ToolError(f"bill {bill.id} is already paid")
    bill.status = "paid"
    return {"paid": bill.id, "amount": fmt(bill.amount)}


@tool(mutates=True)
def resume_line(state: TelecomState, line_id: str) -> dict:
    """Resume a suspended line; needs no overdue bills.

    Args:
        line_id: id from find_line
    """
    line = state.line(line_id)
    if line.status == "active":
        raise ToolError(f"line {line.id} is already active")
    overdue = [b.id for b in state.bills if b.line_id == line.id and b.status == "overdue"]
    if overdue:
        raise ToolError(f"line {line.id} has overdue bills {', '.join(overdue)}; they must be paid first")
    line.status = "active"
    return {"line_id": line.id, "status": "active"}


@tool(mutates=True, sensitive=True)
def change_plan(state: TelecomState, line_id: str, plan_id: str) -> dict:
    """Move the line to another plan from today.

    Args:
        line_id: id from find_line
        plan_id: id from list_plans
    """
    line = state.line(line_id)
    plan = state.plan(plan_id)
    if line.plan_id == plan.id:
        raise ToolError(f"line {line.id} is already on {plan.name}")
    line.plan_id = plan.id
    return {"line_id": line.id, "plan": plan.name, "monthly_price": fmt(plan.price)}


@tool(mutates=True)
def hand_off_to_technician(state: TelecomState, summary: str) -> dict:
    """Pass the case to a technician.

    Args:
        summary: what was tried and what still fails
    """
    state.handoffs.append(text_arg(summary, "summary", 500))
    return {"handed_off": True, "ticket": f"TT{len(state.handoffs):04d}"}


TOOLS = suite(
    "telecom",
    [
        find_line,
        list_plans,
        enable_roaming,
        add_data_pack,
        take_payment,
        resume_line,
        change_plan,
        hand_off_to_technician,
    ],
)


# ---- the customer's side: what they can do on their own phone --------------------------------
@tool()
def check_phone(state: TelecomState) -> dict:
    """Look at the phone: signal, status bar, settings."""
    return {**state.diagnose(), **state.phone.model_dump()}


@tool(mutates=True)
def toggle_airplane_mode(state: TelecomState, on: bool) -> dict:
    """Switch airplane mode.

    Args:
        on: true for airplane mode
    """
    state.phone.airplane_mode = on
    return check_phone.fn(state)


@tool(mutates=True)
def toggle_mobile_data(state: TelecomState, on: bool) -> dict:
    """Switch mobile data.

    Args:
        on: true to use mobile data
    """
    state.phone.mobile_data = on
    return check_phone.fn(state)


@tool(mutates=True)
def toggle_data_roaming(state: TelecomState, on: bool) -> dict:
    """Switch data roaming.

    Args:
        on: true to allow data abroad
    """
    state.phone.data_roaming = on
    return check_phone.fn(state)


@tool(mutates=True)
def reseat_sim(state: TelecomState) -> dict:
    """Take the SIM card out and put it back."""
    state.phone.sim_seated = True
    return check_phone.fn(state)


USER_TOOLS = suite(
    "telecom_phone", [check_phone, toggle_airplane_mode, toggle_mobile_data, toggle_data_roaming, reseat_sim]
)
