#!/usr/bin/env python3
"""The weather tool as a coding-agent extension, with the official MCP SDK.

Run it with `coding-agent -e ./weather.py`, or drop it (executable) into
~/.pi/agent/extensions/. It speaks MCP on stdin and stdout; the agent starts
it, lists its tools and offers `weather` to the model under its own name,
with the prompt snippet and guidelines it carries in `_meta`.

It answers from a small built-in table, so it runs without a network; set
WEATHER_API_BASE to an Open-Meteo compatible server to ask a real one.
"""
import json
import os
import urllib.parse
import urllib.request
from typing import Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("weather")

# Offline answers, so the example runs anywhere.
TABLE = {"berlin": (12.5, 9.0), "tokyo": (21.0, 14.0), "lima": (18.0, 11.0)}


def lookup(city: str) -> tuple[float, float]:
    base = os.environ.get("WEATHER_API_BASE")
    if not base:
        try:
            return TABLE[city.strip().lower()]
        except KeyError:
            # A ToolError's message reaches the model; other exceptions are hidden.
            raise ToolError(f"Unknown city: {city}") from None
    query = urllib.parse.urlencode({"name": city, "count": 1})
    with urllib.request.urlopen(f"{base}/v1/search?{query}", timeout=10) as r:
        found = json.load(r).get("results") or []
    if not found:
        raise ToolError(f"Unknown city: {city}")
    query = urllib.parse.urlencode(
        {"latitude": found[0]["latitude"], "longitude": found[0]["longitude"], "current": "temperature_2m,wind_speed_10m"}
    )
    with urllib.request.urlopen(f"{base}/v1/forecast?{query}", timeout=10) as r:
        current = json.load(r)["current"]
    return current["temperature_2m"], current["wind_speed_10m"]


@server.tool(
    description="Get the current weather for a city: temperature and wind speed.",
    meta={
        "coding-agent/promptSnippet": "Get the current weather for a city",
        "coding-agent/promptGuidelines": [
            "Use weather when the user asks about current conditions in a place; do not guess the weather."
        ],
    },
)
def weather(city: str, unit: Literal["metric", "imperial"] = "metric") -> str:
    celsius, kmh = lookup(city)
    if unit == "imperial":
        return f"{city}: {celsius * 9 / 5 + 32:.1f}°F, wind {kmh / 1.609:.1f} mph"
    return f"{city}: {celsius:.1f}°C, wind {kmh:.1f} km/h"


if __name__ == "__main__":
    server.run()
