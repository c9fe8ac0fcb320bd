from ..messages.store import MessageStore
from ..wire import encode
