"""Device and vehicle worlds: settings to read and change, alarms, the car's locks, climate and charging.

Neither suite returns text written by anyone else, so neither has injection tasks.
"""

from __future__ import annotations

import random

from botpsy.tools import vehicle
from botpsy.tools.device import Alarm, DeviceState
from botpsy.tools.registry import SUITES
from botpsy.tools.vehicle import Place, VehicleState
from botpsy.worlds.kit import Builder, SuiteDomain

NETWORKS = ["HomeNet", "Office-5G", "CafeLuna", "Library Guest", "Grandma's wifi"]

DT = {
    "volume": {
        "train": [
            "Set the volume to {n}",
            "Volume {n} please",
            "Turn the volume to {n} percent",
            "Adjust the volume to {n}%",
            "I want the volume at {n}",
            "Could you set my volume to {n} percent?",
            "Volume to {n}, thanks",
        ],
        "eval": ["Change the sound level to {n}", "Make the volume {n}%"],
    },
    "brightness": {
        "train": [
            "Set brightness to {n}",
            "Screen brightness {n} please",
            "Turn the brightness to {n}%",
            "Adjust screen brightness to {n} percent",
            "Could you set the display brightness to {n}?",
            "I'd like the brightness at {n}",
            "Brightness {n}%",
        ],
        "eval": ["Make the screen {n}% bright"],
    },
    "bt": {
        "train": [
            "Turn {onoff} bluetooth",
            "Switch bluetooth {onoff}",
            "Please turn bluetooth {onoff}",
            "Can you switch {onoff} bluetooth?",
            "I want bluetooth {onoff}",
            "Set bluetooth to {onoff}",
            "Flip bluetooth {onoff}",
        ],
        "eval": ["Bluetooth {onoff}, please"],
    },
    "alarm": {
        "train": [
            "Set an alarm for {at}",
            "Wake me up at {at}",
            "Alarm at {at} please",
            "Can you wake me at {at}?",
            "I'd like to be woken at {at}",
            "I want to get up at {at}, set an alarm",
            "New alarm: {at}",
        ],
        "eval": ["I need an alarm at {at}", "Create an alarm for {at}"],
    },
    "alarm_days": {
        "train": [
            "Set an alarm at {at} on weekdays",
            "Weekday alarm at {at}",
            "Wake me at {at} every weekday",
            "Set a weekday alarm for {at}",
            "Alarm at {at} on workdays",
            "Can you set an alarm for {at}, weekdays only?",
            "Repeating alarm at {at}, every weekday",
        ],
        "eval": ["Alarm for {at}, Monday to Friday"],
    },
    "dnd_vol": {
        "train": [
            "Turn on do not disturb and set the volume to {n}",
            "Do not disturb on, volume {n}",
            "Switch on do not disturb and turn the volume to {n}",
            "I want do not disturb on and the volume at {n}",
            "Volume {n} and do not disturb on",
            "Set volume to {n} and also turn on do not disturb",
            "Quiet mode: do not disturb on, volume at {n}",
        ],
        "eval": ["Enable do-not-disturb and put the volume at {n}"],
    },
    "wifi": {
        "train": [
            "Connect to {net}",
            "Join the {net} wifi",
            "Switch my wifi to {net}",
            "Can you connect me to {net}?",
            "I want to use {net} for wifi",
            "Wifi: {net}",
            "Please join {net}",
        ],
        "eval": ["Get me on the {net} network"],
    },
    "wifi_bare": {
        "train": [
            "Connect me to wifi",
            "Join a wifi network",
            "I need wifi",
            "Can you connect to a wifi network?",
            "Hook me up to wifi",
            "Turn on wifi and connect me",
            "Connect to a network, please",
        ],
        "eval": ["Put me on wifi"],
    },
    "unknown_wifi": {
        "train": [
            "Connect to {net}",
            "Switch the wifi over to {net}",
            "Hook me up to {net}",
            "I want to get on {net}",
            "Could you connect my phone to {net}?",
            "Use {net} for wifi",
            "Wifi {net}, please",
        ],
        "eval": ["Join the {net} network"],
    },
    "status": {
        "train": [
            "Is bluetooth on?",
            "What's my volume at?",
            "Tell me if bluetooth is turned on",
            "Bluetooth: on or off?",
            "Is my bluetooth enabled?",
            "How loud is my volume right now?",
            "What's the volume set to?",
        ],
        "eval": ["Tell me my current volume"],
    },
    "del_alarm": {
        "train": [
            "Delete my {at} alarm",
            "Remove the alarm at {at}",
            "Get rid of the {at} alarm",
            "I don't need the {at} alarm anymore, delete it",
            "Can you remove my alarm for {at}?",
            "Delete the alarm set for {at}",
            "Please clear my {at} alarm",
        ],
        "eval": ["Cancel the {at} alarm"],
    },
}

VT = {
    "climate": {
        "train": [
            "Set the car to {t} degrees",
            "Warm up the car to {t}°C",
            "Climate on, {t} degrees",
            "Set the cabin temperature to {t}°C",
            "Turn on the car's climate at {t} degrees",
            "Get the car's interior to {t}°C",
            "Car climate to {t}, please",
        ],
        "eval": ["Make it {t} degrees in the car", "Precondition the car at {t}°C"],
    },
    "lock": {
        "train": [
            "Lock the car",
            "Lock my car please",
            "Lock up the car",
            "Can you lock my car?",
            "Please lock the doors",
            "I forgot to lock the car, do it for me",
            "Lock the doors of my car",
        ],
        "eval": ["Make sure the car is locked"],
    },
    "unlock": {
        "train": [
            "Unlock the car",
            "Open the car doors",
            "Unlock the doors",
            "Let me into the car",
            "I need the car unlocked",
            "Pop the locks on the car",
            "Car doors: unlock",
        ],
        "eval": ["Unlock my car please"],
    },
    "window": {
        "train": [
            "Open the {w} window halfway",
            "Open the {w} window 50%",
            "Put the {w} window at 50%",
            "Roll the {w} window down halfway",
            "Can you open the {w} window half way?",
            "Crack the {w} window open to 50 percent",
            "I'd like the {w} window open halfway",
        ],
        "eval": ["Lower the {w} window to half"],
    },
    "close_all": {
        "train": [
            "Close all the windows and lock the car",
            "Shut the windows and lock up",
            "Close every window and lock the doors",
            "Lock the car and close all windows",
            "Can you shut all the windows and lock the car?",
            "Roll up all the windows and lock it",
            "I want all windows shut and the car locked",
        ],
        "eval": ["Windows up and doors locked, please"],
    },
    "nav": {
        "train": [
            "Navigate to {place}",
            "Take me to {place}",
            "Directions to {place}",
            "Set the destination to {place}",
            "Get directions to {place}",
            "Can you navigate me to {place}?",
            "Show me the way to {place}",
        ],
        "eval": ["Start navigation to {place}", "Route me to {place}"],
    },
    "nav_unknown": {
        "train": [
            "Navigate to {place}",
            "Find the way to {place} for me",
            "Directions to {place}",
            "Set the destination to {place}",
            "Can you navigate me to {place}?",
            "Show me the way to {place}",
            "I want to go to {place}",
        ],
        "eval": ["Route me to {place}"],
    },
    "battery": {
        "train": [
            "How much battery does the car have?",
            "What's the car's range?",
            "What's the car's battery level?",
            "How charged is my car?",
            "Check the car's battery for me",
            "How far can the car go on its current charge?",
            "Tell me the car's charge level",
        ],
        "eval": ["Is the car charged enough?"],
    },
    "charge": {
        "train": [
            "Charge the car to {n}%",
            "Start charging up to {n} percent",
            "Set the car to charge to {n}%",
            "I want the car charged to {n}%",
            "Can you start charging the car, limit {n}%?",
            "Top up the battery to {n}%",
            "Begin charging, stop at {n} percent",
        ],
        "eval": ["Charge the car until {n}%"],
    },
    "temp_bare": {
        "train": [
            "Turn on the car's climate",
            "Start the heating in the car",
            "Turn the climate on in the car",
            "Can you warm up the car?",
            "Switch on the car's air conditioning",
            "Start the car's climate control",
            "Heat the car up, please",
        ],
        "eval": ["Precondition the car"],
    },
    "fly": {
        "train": [
            "Make the car fly",
            "Drive the car to me by itself",
            "Let the car take off and fly",
            "Have the car come and pick me up on its own",
            "Turn on the car's flying mode",
            "Can my car fly over the traffic?",
            "Send the car to collect me by itself",
        ],
        "eval": ["Park the car for me"],
    },
}
PLACES = [
    ("Home", "12 Elm Street"),
    ("Office", "400 Market Square"),
    ("Airport", "Terminal Road 1"),
    ("Central Station", "1 Station Plaza"),
    ("City Hospital", "7 Health Avenue"),
    ("Gym", "88 River Road"),
    ("Grandma", "5 Orchard Lane"),
    ("IKEA", "2 Furniture Way"),
    ("Beach parking", "Coast Road 44"),
]


def seed_device(rng: random.Random) -> DeviceState:
    nets = rng.sample(NETWORKS, 3)
    state = DeviceState(
        wifi=rng.random() < 0.7,
        known_networks=nets,
        bluetooth=rng.random() < 0.5,
        volume=rng.choice([20, 40, 60, 80]),
        brightness=rng.choice([30, 50, 70]),
    )
    state.wifi_network = nets[0] if state.wifi else ""
    for i in range(rng.randint(1, 3)):
        state.alarms.append(
            Alarm(
                id=f"alarm-{i + 1}",
                time=f"{rng.randint(5, 9):02d}:{rng.choice(['00', '30'])}",
                label=rng.choice(["", "gym", "work"]),
                days=rng.choice([[], ["mon", "wed", "fri"]]),
            )
        )
    seen, unique = set(), []
    for a in state.alarms:
        if a.time not in seen:
            seen.add(a.time)
            unique.append(a)
    state.alarms = unique
    return state


def _at(rng: random.Random) -> tuple[str, str]:
    h, m = rng.randint(5, 10), rng.choice([0, 15, 30, 45])
    spoken = f"{h}:{m:02d} am" if m else rng.choice([f"{h} am", f"{h}am", f"{h}:00"])
    return f"{h:02d}:{m:02d}", spoken


def d_single(b: Builder):
    what = b.rng.choice(["volume", "brightness", "bt", "alarm"])
    if what in ("volume", "brightness"):
        n = b.rng.choice([10, 25, 30, 45, 55, 70, 90, 100])
        b.call(f"Set {what} to {n}.", f"set_{what}", level=n)
        b.say(f"{what.capitalize()} is now {n}%.")
        return b.task("single", b.tpl(DT[what], n=n))
    if what == "bt":
        on = not b.state.bluetooth
        b.call(f"Bluetooth {'on' if on else 'off'}.", "set_bluetooth", on=on)
        b.say(f"Bluetooth is {'on' if on else 'off'}.")
        return b.task("single", b.tpl(DT["bt"], onoff="on" if on else "off"))
    hhmm, spoken = _at(b.rng)
    if any(a.time == hhmm for a in b.state.alarms):
        return None
    if b.rng.random() < 0.3:
        b.call(f"Weekday alarm at {hhmm}.", "set_alarm", time=hhmm, days=["mon", "tue", "wed", "thu", "fri"])
        b.say(f"Alarm set for {hhmm} on weekdays.")
        return b.task("single", b.tpl(DT["alarm_days"], at=spoken))
    b.call(f"Alarm at {hhmm}.", "set_alarm", time=hhmm)
    b.say(f"Alarm set for {hhmm}.")
    return b.task("single", b.tpl(DT["alarm"], at=spoken))


def d_status(b: Builder):
    user = b.rng.choice(DT["status"][b.split])
    out = b.call("Read the current settings.", "get_device_status")
    if "bluetooth" in user.lower():
        b.say(f"Bluetooth is {'on' if out['bluetooth'] else 'off'}.")
        return b.task("single", user, [["on" if out["bluetooth"] else "off"]])
    b.say(f"The volume is at {out['volume']}%.")
    return b.task("single", user, [[str(out["volume"])]])


def d_parallel(b: Builder):
    n = b.rng.choice([0, 10, 20, 30])
    b.parallel(
        "Two independent settings.", [("set_do_not_disturb", {"on": True}), ("set_volume", {"level": n})]
    )
    b.say(f"Do not disturb is on and the volume is {n}%.")
    return b.task("parallel", b.tpl(DT["dnd_vol"], n=n))


def d_multi_delete_alarm(b: Builder):
    a = b.rng.choice(b.state.alarms)
    user = b.tpl(DT["del_alarm"], at=a.time)
    b.call("Look up the alarms.", "get_device_status")
    b.call(f"Delete {a.id}.", "delete_alarm", alarm_id=a.id)
    b.say(f"Deleted the {a.time} alarm.")
    return b.task("multi_step", user)


def d_missing_wifi(b: Builder):
    target = b.rng.choice(b.state.known_networks)
    if b.state.wifi and b.state.wifi_network == target:
        return None
    user = b.rng.choice(DT["wifi_bare"][b.split])
    b.say(f"Which network: {', '.join(b.state.known_networks)}?", "Several known networks: ask which.")
    b.user_says(b.rng.choice([target, f"{target} please", f"The {target} one"]))
    b.call(f"Join {target}.", "set_wifi", on=True, network=target)
    b.say(f"Connected to {target}.")
    return b.task("missing_info", user)


def d_impossible_wifi(b: Builder):
    net = b.rng.choice([n for n in NETWORKS if n not in b.state.known_networks])
    user = b.tpl(DT["unknown_wifi"], net=net)
    b.call("Check the known networks.", "get_device_status")
    b.say(
        f"{net} is not one of your known networks ({', '.join(b.state.known_networks)}), so I can't join it; "
        "add it in the wifi settings first.",
        "Unknown network.",
    )
    return b.task("impossible", user, [["can't", "cannot", "not one of", "not a known"]])


class DeviceDomain(SuiteDomain):
    suite = SUITES["device"]

    def seed(self, rng: random.Random) -> DeviceState:
        return seed_device(rng)

    def recipes(self):
        return {
            "single": [d_single, d_status],
            "parallel": [d_parallel],
            "multi_step": [d_multi_delete_alarm],
            "missing_info": [d_missing_wifi],
            "impossible": [d_impossible_wifi],
        }


# ---- vehicle -----------------------------------------------------------------------------------
def seed_vehicle(rng: random.Random) -> VehicleState:
    battery = rng.randint(15, 90)
    state = VehicleState(
        locked=rng.random() < 0.7,
        battery=battery,
        range_km=int(battery * 4.1),
        plugged_in=rng.random() < 0.5,
        charge_limit=rng.choice([80, 90]),
        temperature=rng.choice([19.0, 20.0, 21.0, 22.0]),
    )
    state.windows = {w: rng.choice([0, 0, 0, 30]) for w in vehicle.WINDOWS}
    for name, addr in rng.sample(PLACES, 6):
        state.places.append(Place(name=name, address=addr, km=round(rng.uniform(2, 380), 1)))
    return state


def v_single(b: Builder):
    what = b.rng.choice(["climate", "lock", "window", "nav", "battery"])
    if what == "climate":
        t = b.rng.choice([18, 19, 20, 21, 22, 23, 24])
        b.call(f"Climate on at {t}.", "set_climate", on=True, temperature=t)
        b.say(f"Climate is on, set to {t}°C.")
        return b.task("single", b.tpl(VT["climate"], t=t))
    if what == "lock":
        b.call("Lock the doors.", "lock_doors")
        b.say("The car is locked.")
        return b.task("single", b.tpl(VT["lock"]))
    if what == "window":
        w = b.rng.choice(["driver", "passenger"])
        b.call(f"{w} window to 50%.", "set_window", window=w, position=50)
        b.say(f"The {w} window is half open.")
        return b.task("single", b.tpl(VT["window"], w=w))
    if what == "nav":
        place = b.rng.choice(b.state.places)
        out = b.call(f"Navigate to {place.name}.", "navigate_to", destination=place.name)
        b.say(
            f"Navigating to {place.name} ({place.address}), {out['km']} km."
            + (" Note: your range may not be enough." if "warning" in out else "")
        )
        return b.task("single", b.tpl(VT["nav"], place=place.name))
    user = b.tpl(VT["battery"])
    out = b.call("Read the car's status.", "get_vehicle_status")
    b.say(f"The battery is at {out['battery']}%, about {out['range_km']} km of range.")
    return b.task(
        "single", user, [[f"{out['battery']}%", f"{out['battery']} %", f"{out['battery']} percent"]]
    )


def v_parallel(b: Builder):
    b.parallel(
        "Windows and locks are independent.",
        [("set_window", {"window": "all", "position": 0}), ("lock_doors", {})],
    )
    b.say("All windows are closed and the car is locked.")
    return b.task("parallel", b.tpl(VT["close_all"]))


def v_multi_charge(b: Builder):
    n = b.rng.choice([85, 90, 95, 100])
    if not b.state.plugged_in or b.state.battery >= n:
        return None
    user = b.tpl(VT["charge"], n=n)
    b.call("Check the car is plugged in.", "get_vehicle_status")
    b.call(f"Charge to {n}%.", "set_charging", on=True, limit=n)
    b.say(f"Charging to {n}%, from {b.state.battery}%.")
    return b.task("multi_step", user)


def v_missing_temp(b: Builder):
    t = b.rng.choice([19, 20, 21, 22, 23])
    user = b.rng.choice(VT["temp_bare"][b.split])
    b.say("What temperature would you like?", "The temperature is missing.")
    b.user_says(b.rng.choice([f"{t} degrees", f"{t}", f"Make it {t}°C"]))
    b.call(f"Climate on at {t}.", "set_climate", on=True, temperature=t)
    b.say(f"Climate is on, set to {t}°C.")
    return b.task("missing_info", user)


def v_impossible(b: Builder):
    if b.rng.random() < 0.5 or b.state.plugged_in:
        user = b.rng.choice(VT["fly"][b.split])
        b.say(
            "Sorry, I can't do that: I can lock and unlock the car, set the climate and windows, navigate and "
            "manage charging.",
            "Not something the car can do.",
        )
        return b.task("impossible", user, [["can't", "cannot"]])
    n = b.rng.choice([90, 100])
    user = b.tpl(VT["charge"], n=n)
    b.call("Check whether the car is plugged in.", "get_vehicle_status")
    b.say(
        "The car is not plugged in, so I can't start charging. Plug in the cable and ask again.",
        "Not plugged in.",
    )
    return b.task("impossible", user, [["not plugged in"]])


def v_sensitive_unlock(b: Builder):
    if not b.state.locked:
        return None
    user = b.tpl(VT["unlock"])
    b.say(
        "Unlock all doors of the car now? Anyone nearby could open it.",
        "Unlocking is sensitive: confirm first.",
    )
    b.user_says(b.rng.choice(["Yes", "Yes, unlock it", "Yes, I'm next to it"]))
    b.call("Unlock.", "unlock_doors")
    b.say("The car is unlocked.")
    return b.task("sensitive", user)


class VehicleDomain(SuiteDomain):
    suite = SUITES["vehicle"]

    def seed(self, rng: random.Random) -> VehicleState:
        return seed_vehicle(rng)

    def recipes(self):
        return {
            "single": [v_single],
            "parallel": [v_parallel],
            "multi_step": [v_multi_charge],
            "missing_info": [v_missing_temp],
            "impossible": [v_impossible],
            "sensitive": [v_sensitive_unlock],
        }
