"""Vehicle suite: locks, climate, windows, navigation and charging of the user's electric car.

Shaped like the car-control APIs of function-calling benchmarks, written for this project:
windows by position, temperatures in °C within the car's range, a charge limit the charger stops
at. Unlocking is sensitive (it opens the car to anyone nearby); navigation only accepts
destinations the car's map knows, so a typo is an error, not a trip to the wrong town.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from botpsy.tools.base import ToolError, suite, tool
from botpsy.tools.common import int_range, norm

Window = Literal["driver", "passenger", "rear_left", "rear_right", "all"]
WINDOWS = ("driver", "passenger", "rear_left", "rear_right")


class Place(BaseModel):
    name: str
    address: str
    km: float  # distance from the car


class VehicleState(BaseModel):
    locked: bool = True
    climate_on: bool = False
    temperature: float = 21.0
    windows: dict[str, int] = Field(default_factory=lambda: dict.fromkeys(WINDOWS, 0))  # % open
    battery: int = 60  # %
    range_km: int = 240
    charging: bool = False
    plugged_in: bool = False
    charge_limit: int = 80
    destination: str = ""
    places: list[Place] = Field(default_factory=list)  # the map's known destinations

    def canonical(self) -> dict:
        d = self.model_dump(exclude={"places"})
        d["destination"] = norm(self.destination)
        return d


@tool()
def get_vehicle_status(state: VehicleState) -> dict:
    """Show locks, climate, windows, battery, charging and navigation."""
    return state.model_dump(exclude={"places"})


@tool(mutates=True)
def lock_doors(state: VehicleState) -> dict:
    """Lock all doors."""
    state.locked = True
    return {"locked": True}


@tool(mutates=True, sensitive=True)
def unlock_doors(state: VehicleState) -> dict:
    """Unlock all doors."""
    state.locked = False
    return {"locked": False}


@tool(mutates=True)
def set_climate(state: VehicleState, on: bool = True, temperature: float | None = None) -> dict:
    """Turn climate on or off, or set its temperature.

    Args:
        on: true to run climate
        temperature: °C, 16 to 28
    """
    if temperature is not None:
        if not 16 <= temperature <= 28:
            raise ToolError(f"temperature: expected 16 to 28 °C, got {temperature}")
        if not on:
            raise ToolError("temperature: cannot set a temperature while turning climate off")
        state.temperature = round(temperature * 2) / 2
    state.climate_on = on
    return {"climate_on": on, "temperature": state.temperature}


@tool(mutates=True)
def set_window(state: VehicleState, window: Window, position: int) -> dict:
    """Open or close a window.

    Args:
        window: driver, passenger, rear_left, rear_right or all
        position: percent open, 0 closed to 100 fully open
    """
    int_range(position, "position", 0, 100)
    for w in WINDOWS if window == "all" else (window,):
        state.windows[w] = position
    return {"windows": dict(state.windows)}


@tool(mutates=True)
def navigate_to(state: VehicleState, destination: str) -> dict:
    """Start navigation to a place.

    Args:
        destination: place name or address
    """
    words = norm(destination)
    if not words:
        raise ToolError("destination: must not be empty")
    hits = [p for p in state.places if words in norm(p.name) or words in norm(p.address)]
    exact = [p for p in hits if norm(p.name) == words or norm(p.address) == words]
    hits = exact or hits
    if not hits:
        raise ToolError(f"destination: the map does not know {destination!r}; try a fuller name or address")
    if len(hits) > 1:
        raise ToolError(
            f"destination: {destination!r} matches {', '.join(p.name for p in hits[:5])}; say which"
        )
    place = hits[0]
    state.destination = place.name
    reachable = place.km <= state.range_km
    return {
        "navigating_to": place.name,
        "address": place.address,
        "km": place.km,
        **({} if reachable else {"warning": f"range {state.range_km} km is less than {place.km} km"}),
    }


@tool(mutates=True)
def set_charging(state: VehicleState, on: bool, limit: int | None = None) -> dict:
    """Start or stop charging, or set the charge limit.

    Args:
        on: true to charge
        limit: stop at this battery percent, 50 to 100
    """
    new_limit = state.charge_limit if limit is None else int_range(limit, "limit", 50, 100)
    if on and not state.plugged_in:
        raise ToolError("the car is not plugged in; plug in the cable first")
    if on and state.battery >= new_limit:
        raise ToolError(f"battery {state.battery}% is already at the limit {new_limit}%")
    state.charge_limit, state.charging = new_limit, on
    return {"charging": on, "battery": state.battery, "charge_limit": state.charge_limit}


TOOLS = suite(
    "vehicle",
    [get_vehicle_status, lock_doors, unlock_doors, set_climate, set_window, navigate_to, set_charging],
)
