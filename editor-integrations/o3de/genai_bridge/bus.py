"""The addressing constants of `azlmbr.bus`, so bus calls read as they do in O3DE.

`Event` sends to the handlers connected at one address (a conversation or an agent);
`Broadcast` sends to every handler of the bus.
"""

Event = "Event"
Broadcast = "Broadcast"
