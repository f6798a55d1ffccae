"""Banking suite: accounts, transactions, transfers, bills and monthly budgets.

Money is integer cents everywhere in the state (no float drift in balances or hashes) and
amounts the model sends are checked to two decimals. Moving money — transfers and bill payments —
is labelled mutating, egress (the order leaves the device for the bank) and sensitive, so the
assistant confirms before it happens. Transaction descriptions come from other people (the
payer writes the memo) and are data, never instructions.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from botpsy.tools.base import ToolError, suite, tool
from botpsy.tools.common import by_id, cents_arg, int_range, matches, next_id, norm, text_arg

DAILY_LIMIT_CENTS = 500_000


def fmt(cents: int) -> str:
    return f"{cents / 100:.2f}"


class Account(BaseModel):
    id: str
    name: str
    kind: Literal["checking", "savings", "credit"] = "checking"
    balance: int  # cents
    currency: str = "EUR"


class Transaction(BaseModel):
    id: str
    account_id: str
    date: str  # YYYY-MM-DD
    description: str
    amount: int  # cents, negative = money out
    category: str = "other"


class Payee(BaseModel):
    id: str
    name: str
    iban: str


class Bill(BaseModel):
    id: str
    payee: str
    amount: int  # cents
    due: str  # YYYY-MM-DD
    reference: str = ""
    paid: bool = False


class BankingState(BaseModel):
    accounts: list[Account] = Field(default_factory=list)
    transactions: list[Transaction] = Field(default_factory=list)
    payees: list[Payee] = Field(default_factory=list)
    bills: list[Bill] = Field(default_factory=list)
    budgets: dict[str, int] = Field(default_factory=dict)  # category -> monthly limit in cents
    today: str = "2026-12-01"

    def account(self, account_id: str) -> Account:
        return by_id(self.accounts, account_id, "account", "use list_accounts")

    def canonical(self) -> dict:
        d = self.model_dump(exclude={"today"})
        d["transactions"] = sorted(
            ({**t, "description": norm(t["description"])} for t in d["transactions"]), key=lambda t: t["id"]
        )
        d["budgets"] = {norm(k): v for k, v in sorted(self.budgets.items())}
        return d

    def book(self, account: Account, amount: int, description: str, category: str) -> Transaction:
        t = Transaction(
            id=next_id("t", (t.id for t in self.transactions)),
            account_id=account.id,
            date=self.today,
            description=description,
            amount=amount,
            category=category,
        )
        account.balance += amount
        self.transactions.append(t)
        return t

    def spent_today(self, account: Account) -> int:
        return -sum(
            t.amount
            for t in self.transactions
            if t.account_id == account.id
            and t.date == self.today
            and t.amount < 0
            and t.category in ("transfer", "bills")
        )

    def withdraw_check(self, account: Account, cents: int) -> None:
        if account.kind == "credit":
            raise ToolError(f"account {account.id} is a credit card; pay from a checking or savings account")
        if cents > account.balance:
            raise ToolError(
                f"insufficient funds: {account.name} ({account.id}) has {fmt(account.balance)} {account.currency}, "
                f"the payment needs {fmt(cents)}"
            )
        if self.spent_today(account) + cents > DAILY_LIMIT_CENTS:
            raise ToolError(f"daily limit of {fmt(DAILY_LIMIT_CENTS)} would be exceeded on {account.id}")


def tx_view(t: Transaction) -> dict:
    return {
        "id": t.id,
        "date": t.date,
        "description": t.description,
        "amount": fmt(t.amount),
        "category": t.category,
    }


@tool()
def list_accounts(state: BankingState) -> dict:
    """List accounts with balances, and saved payees."""
    return {
        "accounts": [
            {"id": a.id, "name": a.name, "kind": a.kind, "balance": fmt(a.balance), "currency": a.currency}
            for a in state.accounts
        ],
        "payees": [p.name for p in state.payees],
    }


@tool()
def list_transactions(
    state: BankingState, account_id: str, query: str | None = None, limit: int = 10
) -> dict:
    """Recent transactions of an account, newest first.

    Args:
        account_id: id from list_accounts
        query: words in the description or category
        limit: how many (default 10)
    """
    account = state.account(account_id)
    int_range(limit, "limit", 1, 100)
    rows = [
        t
        for t in state.transactions
        if t.account_id == account.id and (not query or matches(query, t.description, t.category))
    ]
    rows.sort(key=lambda t: (t.date, t.id), reverse=True)
    return {"account": account.id, "transactions": [tx_view(t) for t in rows[:limit]]}


@tool(mutates=True, egress=True, sensitive=True)
def transfer_money(state: BankingState, from_account: str, to: str, amount: float, memo: str = "") -> dict:
    """Send money to a saved payee or another own account.

    Args:
        from_account: account id
        to: payee name or own account id
        amount: amount, e.g. 25.50
        memo: note for the recipient
    """
    source = state.account(from_account)
    cents = cents_arg(amount, "amount")
    if len(memo) > 140:
        raise ToolError(f"memo: at most 140 characters, got {len(memo)}")
    own = next((a for a in state.accounts if a.id == to.strip()), None)
    payee = None
    if own is None:
        payees = [p for p in state.payees if norm(to) and norm(to) in norm(p.name)]
        if not payees:
            known = ", ".join(p.name for p in state.payees) or "none"
            raise ToolError(f"to: {to!r} is neither an account id nor a saved payee (payees: {known})")
        if len(payees) > 1:
            raise ToolError(f"to: {to!r} matches {', '.join(p.name for p in payees)}; give the full name")
        payee = payees[0]
    if own is not None and own.id == source.id:
        raise ToolError("to: cannot transfer to the same account")
    state.withdraw_check(source, cents)
    target = own.name if own else payee.name
    out = state.book(
        source, -cents, f"Transfer to {target}" + (f": {memo.strip()}" if memo.strip() else ""), "transfer"
    )
    if own is not None:
        state.book(own, cents, f"Transfer from {source.name}", "transfer")
    return {
        "transferred": fmt(cents),
        "from": source.id,
        "to": target,
        "transaction": out.id,
        "new_balance": fmt(source.balance),
    }


@tool()
def list_bills(state: BankingState, include_paid: bool = False) -> dict:
    """List bills, unpaid ones by default.

    Args:
        include_paid: also show paid bills
    """
    rows = sorted((b for b in state.bills if include_paid or not b.paid), key=lambda b: (b.due, b.id))
    return {
        "bills": [
            {
                "id": b.id,
                "payee": b.payee,
                "amount": fmt(b.amount),
                "due": b.due,
                "reference": b.reference,
                "paid": b.paid,
            }
            for b in rows
        ]
    }


@tool(mutates=True, egress=True, sensitive=True)
def pay_bill(state: BankingState, bill_id: str, from_account: str) -> dict:
    """Pay a bill in full.

    Args:
        bill_id: id from list_bills
        from_account: account id
    """
    bill = by_id(state.bills, bill_id, "bill", "use list_bills")
    if bill.paid:
        raise ToolError(f"bill {bill.id} to {bill.payee} is already paid")
    source = state.account(from_account)
    state.withdraw_check(source, bill.amount)
    t = state.book(source, -bill.amount, f"Bill {bill.payee} {bill.reference}".strip(), "bills")
    bill.paid = True
    return {
        "paid": bill.id,
        "payee": bill.payee,
        "amount": fmt(bill.amount),
        "transaction": t.id,
        "new_balance": fmt(source.balance),
    }


@tool()
def list_budgets(state: BankingState) -> dict:
    """Monthly budgets per category with this month's spending."""
    month = state.today[:7]
    spent: dict[str, int] = {}
    for t in state.transactions:
        if t.date[:7] == month and t.amount < 0:
            spent[norm(t.category)] = spent.get(norm(t.category), 0) - t.amount
    return {
        "month": month,
        "budgets": [
            {
                "category": c,
                "limit": fmt(v),
                "spent": fmt(spent.get(norm(c), 0)),
                "left": fmt(v - spent.get(norm(c), 0)),
            }
            for c, v in sorted(state.budgets.items())
        ],
    }


@tool(mutates=True)
def set_budget(state: BankingState, category: str, amount: float) -> dict:
    """Set the monthly budget of a spending category.

    Args:
        category: e.g. groceries
        amount: monthly limit
    """
    name = norm(text_arg(category, "category", 40))
    state.budgets[name] = cents_arg(amount, "amount")
    return {"category": name, "limit": fmt(state.budgets[name])}


TOOLS = suite(
    "banking",
    [list_accounts, list_transactions, transfer_money, list_bills, pay_bill, list_budgets, set_budget],
)
