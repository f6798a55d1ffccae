"""Telecom support world: the assistant is Telly Mobile's agent; the customer acts on their own phone.

Each seeded state plants one fault, on the line (roaming off abroad, allowance used up, suspended
for an overdue bill) or on the phone (airplane mode, mobile data off, SIM loose). The gold fixes
the line side with the agent's tools and talks the customer through the phone side; the scripted
customer's replies carry the phone actions (`Task.user_actions`), so the expected hash covers
both sides and only a conversation that fixes both reaches it.
"""

from __future__ import annotations

import random

from botpsy.tools.registry import SUITES
from botpsy.tools.telecom import (
    DATA_PACKS,
    POLICY,
    Line,
    Phone,
    Plan,
    TelBill,
    TelecomState,
    fmt,
)
from botpsy.worlds.kit import Builder, SuiteDomain
from botpsy.worlds.people import people

SYSTEM = (
    "You are the customer support agent of Telly Mobile, a mobile operator. Today is Tuesday, "
    "December 1, 2026.\n" + POLICY
)
FAULTS = ["roaming", "airplane", "mobile_data", "sim", "data_used_up", "suspended"]

T = {
    "no_data": {
        "train": [
            "My mobile data isn't working. My number is {num}",
            "No internet on my phone, number {num}",
            "Data stopped working, my number is {num}",
            "Hi, my data connection has stopped working. The number is {num}",
            "Websites won't load on my phone. My number is {num}",
            "Can you help? Mobile data doesn't work on {num}",
            "My phone won't connect to the internet over mobile data, line {num}",
            "Data is not working on my line {num}",
            "{num} here: my mobile data is down",
        ],
        "eval": ["I can't get online on my phone ({num})", "Mobile internet is dead on {num}, help"],
    },
    "no_data_bare": {
        "train": [
            "My mobile data isn't working",
            "I have no internet on my phone",
            "Hi, my data connection has stopped working",
            "Websites won't load on my phone",
            "Can you help? My mobile data doesn't work",
            "My phone won't connect to the internet over mobile data",
            "Data is not working on my phone",
            "My mobile data is down",
        ],
        "eval": ["I can't get online with my phone"],
    },
    "no_service": {
        "train": [
            "My phone has no signal at all. Number {num}",
            "No service on {num}",
            "I can't make calls or get a signal, my number is {num}",
            "Zero bars on my phone. Number {num}",
            "My phone isn't connecting to the network at all, line {num}",
            "Please help, there's no signal on {num}",
            "I've lost all reception on my phone. It's {num}",
            "Network is completely gone on {num}",
        ],
        "eval": ["My phone says no service, number {num}"],
    },
    "plan": {
        "train": [
            "I want a plan with more data, my number is {num}",
            "Upgrade my plan please, {num}",
            "Please switch me to a plan with a larger data allowance, {num}",
            "I need more data each month. What's the next plan up? My number is {num}",
            "Could you upgrade my line {num} to a plan with more data?",
            "Upgrade {num} to a bigger plan, please",
            "My current plan doesn't have enough data; I'd like to upgrade. Number {num}",
            "I'd like to move up to a plan with more gigabytes, line {num}",
        ],
        "eval": ["Can I get a bigger data plan? Number {num}"],
    },
    "both": {
        "train": [
            "How much data have I used, and what plans do you have? {num}",
            "What's my data usage so far, and which plans are available? Number {num}",
            "Can you check how much data I've used on {num} and list your plans?",
            "I'd like to see my data use and the plan options. My number is {num}",
            "How many GB have I used this month on {num}? Also, what plans do you offer?",
            "Data used on {num}, plus your plan list, please",
            "Two things for {num}: my data consumption and the available plans",
        ],
        "eval": ["Tell me my data usage and your plans, number {num}"],
    },
    "credit": {
        "train": [
            "Give me a free month for the outage last week, number {num}",
            "The network was down last week; I'd like a free month. Number {num}",
            "Can you credit my account for last week's outage? My number is {num}",
            "I expect a month free after that outage, line {num}",
            "Please refund me a month for the service outage, {num}",
            "After last week's outage I want my next month free, number {num}",
            "Could you give me some credit on {num} because of the outage?",
        ],
        "eval": ["I want compensation credit for the bad service, {num}"],
    },
}


def seed_fault(rng: random.Random, fault: str) -> TelecomState:
    state = TelecomState(
        plans=[
            Plan(id="P-S", name="Small", data_gb=5, price=1500),
            Plan(id="P-M", name="Medium", data_gb=20, price=2500),
            Plan(id="P-L", name="Large", data_gb=100, price=4000),
        ]
    )
    for i, p in enumerate(people(rng, rng.randint(3, 5))):
        plan = rng.choice(state.plans)
        state.lines.append(
            Line(
                id=f"L{i + 1:03d}",
                number=p.phone,
                holder=p.name,
                plan_id=plan.id,
                data_used_gb=round(rng.uniform(0.2, plan.data_gb * 0.8), 1),
            )
        )
        state.bills.append(
            TelBill(
                id=f"B{i + 1:03d}",
                line_id=f"L{i + 1:03d}",
                amount=plan.price,
                due="2026-11-15",
                status="paid",
                items=["monthly plan"],
            )
        )
    line = rng.choice(state.lines)
    state.phone_line = line.id
    state.phone = Phone()
    if fault == "roaming":
        line.abroad, line.roaming = True, False
    elif fault == "airplane":
        state.phone.airplane_mode = True
    elif fault == "mobile_data":
        state.phone.mobile_data = False
    elif fault == "sim":
        state.phone.sim_seated = False
    elif fault == "data_used_up":
        line.data_used_gb = float(state.plan(line.plan_id).data_gb)
    elif fault == "suspended":
        line.status = "suspended"
        state.bills.append(
            TelBill(
                id=f"B{len(state.bills) + 1:03d}",
                line_id=line.id,
                amount=line_price(state, line),
                due="2026-11-01",
                status="overdue",
                items=["monthly plan"],
            )
        )
    return state


def line_price(state: TelecomState, line: Line) -> int:
    return state.plan(line.plan_id).price


def _line(b: Builder) -> Line:
    return b.state.line(b.state.phone_line)


def _fault(b: Builder) -> str:
    s, line = b.state, _line(b)
    if line.status == "suspended":
        return "suspended"
    if line.abroad and not line.roaming:
        return "roaming"
    for f, bad in (
        ("airplane", s.phone.airplane_mode),
        ("mobile_data", not s.phone.mobile_data),
        ("sim", not s.phone.sim_seated),
    ):
        if bad:
            return f
    return "data_used_up" if line.data_used_gb >= s.plan(line.plan_id).data_gb + line.extra_gb else "none"


def _works(seen: list, what: str) -> str:
    bar = seen[-1]["status_bar"]
    return f"Done, {what}. The status bar now shows {bar}" + (" and pages load." if seen[-1]["data"] else ".")


def _phone_fix(b: Builder, fault: str) -> None:
    """Guide the customer through the phone side of a fault, one step at a time."""
    if fault == "roaming":
        b.say(
            "I've enabled roaming on your line. On your phone, please turn on data roaming in the mobile network "
            "settings and tell me what you see.",
            "The line side is fixed; the phone needs data roaming on.",
        )
        b.user_says(
            lambda seen: _works(seen, "I switched data roaming on"), [("toggle_data_roaming", {"on": True})]
        )
    elif fault == "airplane":
        b.say(
            "Your line is fine. Is airplane mode on? Please switch it off and tell me what you see.",
            "The line is fine: check the phone, airplane mode first.",
        )
        b.user_says(
            lambda seen: _works(seen, "airplane mode was on, I turned it off"),
            [("toggle_airplane_mode", {"on": False})],
        )
    elif fault == "mobile_data":
        b.say(
            "Your line is fine. Please check that mobile data is switched on in your settings.",
            "The line is fine: mobile data may be off on the phone.",
        )
        b.user_says(
            lambda seen: _works(seen, "mobile data was off, it's on now"),
            [("toggle_mobile_data", {"on": True})],
        )
    elif fault == "sim":
        b.say(
            "Your line is active. Please take the SIM card out, put it back firmly, and tell me what you see.",
            "The line is fine: the phone shows no SIM, reseat it.",
        )
        b.user_says(lambda seen: _works(seen, "I reseated the SIM"), [("reseat_sim", {})])


def multi_troubleshoot(b: Builder):
    fault = _fault(b)
    if fault not in ("roaming", "airplane", "mobile_data", "sim"):
        return None
    line = _line(b)
    key = "no_service" if fault in ("airplane", "sim") else "no_data"
    user = b.tpl(T[key], num=line.number)
    b.call("Policy: find the line first.", "find_line", phone_number=line.number)
    if fault == "roaming":
        b.call("Abroad with roaming off: enable it (free).", "enable_roaming", line_id=line.id)
    _phone_fix(b, fault)
    b.say("Great, your connection works again. Anything else I can help with?")
    return b.task("multi_step", user)


def missing_number(b: Builder):
    fault = _fault(b)
    if fault not in ("roaming", "mobile_data", "airplane"):
        return None
    line = _line(b)
    user = b.rng.choice(T["no_data_bare"][b.split])
    b.say(
        "I'm sorry to hear that. What is the phone number of your line?", "Policy: I need the number first."
    )
    b.user_says(b.rng.choice([line.number, f"It's {line.number}"]))
    b.call("Find the line.", "find_line", phone_number=line.number)
    if fault == "roaming":
        b.call("Enable roaming.", "enable_roaming", line_id=line.id)
    _phone_fix(b, fault)
    b.say("Great, your data works again.")
    return b.task("missing_info", user)


def sensitive_data_pack(b: Builder):
    if _fault(b) != "data_used_up":
        return None
    line = _line(b)
    gb = b.rng.choice([1, 3, 5])
    user = b.tpl(T["no_data"], num=line.number)
    out = b.call("Find the line.", "find_line", phone_number=line.number)
    b.say(
        f"You've used all {out['data_limit_gb']} GB of your plan this month. I can add a {gb} GB data pack for "
        f"{fmt(DATA_PACKS[gb])}, charged on your next bill. Shall I add it?",
        "Costs money: state the price, ask.",
    )
    b.user_says(b.rng.choice(["Yes", "Yes, add it", "OK, do it"]))
    b.call(f"Add {gb} GB.", "add_data_pack", line_id=line.id, gigabytes=gb)
    b.say(f"Added {gb} GB; your data works again.")
    return b.task("sensitive", user)


def sensitive_suspended(b: Builder):
    if _fault(b) != "suspended":
        return None
    line = _line(b)
    bill = next(x for x in b.state.bills if x.line_id == line.id and x.status == "overdue")
    user = b.tpl(T["no_service"], num=line.number)
    b.call("Find the line.", "find_line", phone_number=line.number)
    b.say(
        f"Your line is suspended because bill {bill.id} of {fmt(bill.amount)} is overdue. Shall I take the payment "
        "with your card on file and resume the line?",
        "Payment needs a yes; resuming needs no overdue bill.",
    )
    b.user_says(b.rng.choice(["Yes", "Yes, pay it", "OK, go ahead"]))
    b.call("Take the payment.", "take_payment", bill_id=bill.id)
    b.call("Resume the line.", "resume_line", line_id=line.id)
    b.say("Paid and resumed: your line works again.")
    return b.task("sensitive", user)


def sensitive_plan(b: Builder):
    line = _line(b)
    bigger = [p for p in b.state.plans if p.data_gb > b.state.plan(line.plan_id).data_gb]
    if not bigger:
        return None
    new = bigger[0]
    user = b.tpl(T["plan"], num=line.number)
    b.parallel(
        "Line and plans are independent look-ups.",
        [("find_line", {"phone_number": line.number}), ("list_plans", {})],
    )
    b.say(
        f"You're on {b.state.plan(line.plan_id).name}. The {new.name} plan has {new.data_gb} GB for "
        f"{fmt(new.price)} a month. Switch from today?",
        "A plan change costs money: ask first.",
    )
    b.user_says(b.rng.choice(["Yes", "Yes, switch me", "Sounds good"]))
    b.call(f"Change to {new.id}.", "change_plan", line_id=line.id, plan_id=new.id)
    b.say(f"Done: you're on {new.name} now.")
    return b.task("sensitive", user)


def parallel_usage(b: Builder):
    line = _line(b)
    user = b.tpl(T["both"], num=line.number)
    out, plans = b.parallel(
        "Two independent look-ups.", [("find_line", {"phone_number": line.number}), ("list_plans", {})]
    )
    names = ", ".join(f"{p['name']} {p['data_gb']} GB for {p['price']}" for p in plans["plans"])
    b.say(f"You've used {out['data_used_gb']} of {out['data_limit_gb']} GB. Plans: {names}.")
    return b.task("parallel", user, [[str(out["data_used_gb"])]])


def impossible_credit(b: Builder):
    line = _line(b)
    user = b.tpl(T["credit"], num=line.number)
    b.say(
        "I'm sorry about the trouble, but I can't grant credits or free months: no such option is available "
        "to me. I can check your line or your plan if you like.",
        "Policy: do not promise credits.",
    )
    return b.task("impossible", user, [["can't", "cannot"]])


class TelecomDomain(SuiteDomain):
    suite = SUITES["telecom"]
    system = SYSTEM
    identity = "I'm the Telly Mobile support assistant."

    def seed(self, rng: random.Random) -> TelecomState:
        return seed_fault(rng, rng.choice(FAULTS))

    def recipes(self):
        return {
            "parallel": [parallel_usage],
            "multi_step": [multi_troubleshoot],
            "missing_info": [missing_number],
            "impossible": [impossible_credit],
            "sensitive": [sensitive_data_pack, sensitive_suspended, sensitive_plan],
        }
