# The compiled core has the reference's API exactly; its types are the reference's.
from .device_guard import DeviceGuard as DeviceGuard
from .device_guard import device as device
from .result import Err as Err
from .result import Ok as Ok
