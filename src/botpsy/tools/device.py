"""Device settings suite: wifi, bluetooth, volume, brightness, do-not-disturb and alarms.

On a phone these map to the OS settings API; on this machine the settings live in the workspace
database, so the same tools (and the same checker) serve worlds, tests and demos.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from botpsy.tools.base import ToolError, suite, tool
from botpsy.tools.common import by_id, clock_arg, datetime_arg, int_range, next_id, norm

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


class Alarm(BaseModel):
    id: str
    time: str  # HH:MM
    label: str = ""
    days: list[str] = Field(default_factory=list)  # empty: once
    enabled: bool = True


class DeviceState(BaseModel):
    wifi: bool = True
    wifi_network: str = ""
    known_networks: list[str] = Field(default_factory=list)
    bluetooth: bool = False
    volume: int = 50
    brightness: int = 60
    do_not_disturb: bool = False
    dnd_until: str = ""  # YYYY-MM-DDTHH:MM or empty (until turned off)
    alarms: list[Alarm] = Field(default_factory=list)

    def canonical(self) -> dict:
        d = self.model_dump()
        d["wifi_network"] = norm(self.wifi_network)
        d["known_networks"] = sorted(self.known_networks)
        d["alarms"] = sorted(
            (
                {**a.model_dump(), "label": norm(a.label), "days": sorted(a.days, key=DAYS.index)}
                for a in self.alarms
            ),
            key=lambda a: a["id"],
        )
        return d


@tool()
def get_device_status(state: DeviceState) -> dict:
    """Show wifi, bluetooth, volume, brightness, do-not-disturb and alarms."""
    return state.model_dump()


@tool(mutates=True)
def set_wifi(state: DeviceState, on: bool, network: str | None = None) -> dict:
    """Turn wifi on or off, or join a known network.

    Args:
        on: true to turn on
        network: name of a known network to join
    """
    if not on:
        if network:
            raise ToolError("network: cannot join a network while turning wifi off")
        state.wifi, state.wifi_network = False, ""
        return {"wifi": False}
    if network is not None:
        known = {norm(n): n for n in state.known_networks}
        if norm(network) not in known:
            raise ToolError(
                f"network: {network!r} is not a known network; known: {', '.join(state.known_networks)}"
            )
        state.wifi_network = known[norm(network)]
    elif not state.wifi_network and state.known_networks:
        state.wifi_network = state.known_networks[0]
    state.wifi = True
    return {"wifi": True, "network": state.wifi_network}


@tool(mutates=True)
def set_bluetooth(state: DeviceState, on: bool) -> dict:
    """Turn bluetooth on or off.

    Args:
        on: true to turn on
    """
    state.bluetooth = on
    return {"bluetooth": on}


@tool(mutates=True)
def set_volume(state: DeviceState, level: int) -> dict:
    """Set the volume.

    Args:
        level: 0 to 100
    """
    state.volume = int_range(level, "level", 0, 100)
    return {"volume": state.volume}


@tool(mutates=True)
def set_brightness(state: DeviceState, level: int) -> dict:
    """Set the screen brightness.

    Args:
        level: 0 to 100
    """
    state.brightness = int_range(level, "level", 0, 100)
    return {"brightness": state.brightness}


@tool(mutates=True)
def set_do_not_disturb(state: DeviceState, on: bool, until: str | None = None) -> dict:
    """Turn do-not-disturb on or off.

    Args:
        on: true to turn on
        until: YYYY-MM-DDTHH:MM, when it ends
    """
    if not on and until:
        raise ToolError("until: only meaningful when turning do-not-disturb on")
    state.dnd_until = datetime_arg(until, "until") if (on and until) else ""
    state.do_not_disturb = on
    return {"do_not_disturb": on, **({"until": state.dnd_until} if state.dnd_until else {})}


@tool(mutates=True)
def set_alarm(state: DeviceState, time: str, label: str = "", days: list[str] | None = None) -> dict:
    """Create an alarm.

    Args:
        time: HH:MM
        label: name
        days: repeat days: mon tue wed thu fri sat sun
    """
    hhmm = clock_arg(time, "time")
    wanted = []
    for d in days or []:
        key = d.strip().lower()[:3]
        if key not in DAYS:
            raise ToolError(f"days: expected some of {', '.join(DAYS)}, got {d!r}")
        if key not in wanted:
            wanted.append(key)
    wanted.sort(key=DAYS.index)
    for a in state.alarms:
        if a.time == hhmm and a.days == wanted and a.enabled:
            raise ToolError(f"an alarm at {hhmm} already exists ({a.id})")
    alarm = Alarm(
        id=next_id("alarm", (a.id for a in state.alarms)), time=hhmm, label=label.strip(), days=wanted
    )
    state.alarms.append(alarm)
    return {"alarm": alarm.model_dump()}


@tool(mutates=True)
def delete_alarm(state: DeviceState, alarm_id: str) -> dict:
    """Delete an alarm.

    Args:
        alarm_id: id from get_device_status
    """
    alarm = by_id(state.alarms, alarm_id, "alarm", "see get_device_status")
    state.alarms.remove(alarm)
    return {"deleted": alarm.model_dump()}


TOOLS = suite(
    "device",
    [
        get_device_status,
        set_wifi,
        set_bluetooth,
        set_volume,
        set_brightness,
        set_do_not_disturb,
        set_alarm,
        delete_alarm,
    ],
)
